// The options that choose where a command runs (--device, --dtype, --kv-cache-dtype,
// --gpu-memory-utilization, --no-cuda-graphs, --load-format, --tokenizer, --threads, --cpu-math, --cpu-isa), and the
// functions that build the chosen backend: with the model's weights (generate, sweep, complete), or only to answer how
// big its KV pool is (plan).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "cpu/kv_dtype.h"
#include "engine_options.h"
#include "job/prompt_builder.h"
#include "loader/model_files.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "util/stop_token.h"

namespace pagedgen::app {

struct BackendOptions {
  std::string device = "auto";     // auto | cuda | cuda:N | cpu
  std::string dtype = "bfloat16";  // CUDA weights, activations and KV cache
  double gpu_memory_utilization = 0.9;
  bool no_cuda_graphs = false;          // CUDA: run decode steps eagerly instead of replaying graphs
  std::size_t threads = 0;              // CPU threads, 0 = all
  std::string cpu_math = "fast";        // fast (int8 on quantized weights) | exact (float32, the GPU's reference)
  std::string kv_cache_dtype = "auto";  // auto | float32 | float16 | bfloat16
  std::string cpu_isa = "auto";      // auto | avx512-vnni | avx-vnni | avx2 | generic: the fast path's instruction set
  std::string load_format = "auto";  // auto | dummy
  std::string tokenizer;             // dummy: the model whose tokenizer to use
};

// --device, --dtype, --kv-cache-dtype, --gpu-memory-utilization, --no-cuda-graphs, --threads and --cpu-math;
// with `weights`, also --load-format, --tokenizer and --cpu-isa (commands that load weights).
void add_backend_options(CLI::App& command, BackendOptions& options, bool weights = true);

// The model named by -m and --load-format: real files, or (dummy) an HF config.json whose
// weights are random, with the tokenizer and chat template of --tokenizer's model.
struct ModelSource {
  std::unique_ptr<ModelFiles> files;                  // the model; null with dummy weights
  std::unique_ptr<ModelVocabulary> dummy_vocabulary;  // dummy: --tokenizer's vocabulary
  ModelConfig config;
  bool dummy = false;
  std::string name;  // for the stats: the model path or "dummy:<config>"

  // The tokenizer and chat template to use: the model's, or for dummy --tokenizer's.
  const ModelVocabulary& vocabulary() const { return files ? files->vocabulary() : *dummy_vocabulary; }
};

ModelSource open_model_source(const BackendOptions& options, const std::string& model_path);

// The CPU backend's KV element type: --kv-cache-dtype, or for auto float16 with
// --cpu-math fast and float32 with exact.
KvDtype resolved_cpu_kv_dtype(const BackendOptions& options);

struct ChosenBackend {
  std::unique_ptr<ModelWeights> host_weights;  // CPU: the weights the backend reads
  std::unique_ptr<Backend> backend;
  int32_t num_blocks = 0;  // the KV pool at the block size asked for
  std::string device;      // the GPU, or empty on the CPU
};

// Loads the weights onto the device --device selects (saying which on stderr unless
// `quiet`, and falling back to the CPU with one line when `auto` finds no GPU) and asks the
// backend for the KV pool the flags allow at `block_size` (kv_pool_budget): on a GPU what
// --gpu-memory-utilization leaves after weights and activations (allocated for
// --max-batch-tokens tokens and --max-num-seqs logits rows), on the CPU 1GiB by default.
// Throws Stopped when `stop` asks while the CPU's weights load (read per tensor).
ChosenBackend make_backend(const BackendOptions& options, const EngineOptions& engine, const ModelSource& source,
                           int32_t block_size, bool quiet, const StopToken& stop = {});

// The backend --device selects, built only to size a KV pool (`plan`): on the CPU a
// DryRunBackend with the CPU's KV bytes (resolved_kv_dtype); on a GPU the CUDA backend with dummy
// weights of the model's shape (nothing read from disk), so the pool is what a real run
// would get.
std::unique_ptr<Backend> make_sizing_backend(const BackendOptions& options, const EngineOptions& engine,
                                             const ModelConfig& config, bool quiet);

// Why lines that ask for a constrained response_format (or that --json-schema /
// --json-object constrain), penalties or logprobs cannot run on `backend`: the messages of
// their error records; each nullopt where the backend does it.
UnsupportedSampling unsupported_sampling(const Backend& backend);

}  // namespace pagedgen::app
