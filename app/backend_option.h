// The options that choose where `generate` runs (--device, --dtype,
// --gpu-memory-utilization, --load-format, --tokenizer), and the one function that opens
// the model's weights on the chosen backend and sizes its KV pool (with the pool flags of
// engine_options.h).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "engine_options.h"
#include "model/model_config.h"
#include "model/model_files.h"
#include "model/model_weights.h"

namespace pagedgen::app {

struct BackendOptions {
  std::string device = "auto";        // auto | cuda | cuda:N | cpu
  std::string dtype = "bfloat16";     // CUDA weights, activations and KV cache
  double gpu_memory_utilization = 0.9;
  std::size_t threads = 0;            // CPU threads, 0 = all (generate's --threads)
  std::string load_format = "auto";   // auto | dummy
  std::string tokenizer;              // dummy: the model whose tokenizer to use
};

void add_backend_options(CLI::App& command, BackendOptions& options);

// The model named by -m and --load-format: real files, or (dummy) an HF config.json whose
// weights are random, with the tokenizer and chat template of --tokenizer's model.
struct ModelSource {
  std::unique_ptr<ModelFiles> files;  // the model; for dummy, the tokenizer's model
  ModelConfig config;
  bool dummy = false;
  std::string name;                   // for the stats: the model path or "dummy:<config>"
};

ModelSource open_model_source(const BackendOptions& options, const std::string& model_path);

struct ChosenBackend {
  std::unique_ptr<ModelWeights> host_weights;  // CPU: the weights the backend reads
  std::unique_ptr<Backend> backend;
  int32_t num_blocks = 0;
  std::string device;                          // the GPU, or empty on the CPU
};

// Loads the weights onto the device --device selects (saying which on stderr unless
// `quiet`, and falling back to the CPU with one line when `auto` finds no GPU) and sizes
// the KV pool: --num-blocks, else --kv-cache-memory, else on a GPU what
// --gpu-memory-utilization leaves after weights and activations (allocated for
// --max-batch-tokens tokens and --max-num-seqs logits rows), on the CPU 1GiB.
ChosenBackend make_backend(const BackendOptions& options, const EngineOptions& engine, const ModelSource& source,
                           int32_t block_size, bool quiet);

}  // namespace pagedgen::app
