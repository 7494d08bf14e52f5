// `--load-format dummy`: a model of a given architecture (an HF config.json) with random
// weights, to measure throughput at real model sizes without downloading anything. The
// list of tensors below is the one both backends fill (dummy_values.h gives each value).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/model_weights.h"
#include "util/stop_token.h"

namespace pagedgen {

// How one dummy tensor is filled: all ones (the Llama block's norm weights) or uniform in
// [-scale, scale) (matrices, biases, and the q/k and post norms of other architectures).
struct DummyTensor {
  std::string name;             // canonical GGUF-style name, e.g. "blk.3.attn_q.weight"
  std::vector<uint64_t> shape;  // row-major, as load_model_weights expects it
  bool ones = false;
  float scale = 0.0f;  // 1 / sqrt(in_features) for matrices
  uint64_t num_elements() const;
};

// Every tensor of the config, in a fixed order; a tensor's index is its tensor_id.
std::vector<DummyTensor> dummy_tensors(const ModelConfig& config);

// The config of a dummy model: `path` is an HF config.json or a directory holding one.
ModelConfig dummy_model_config(const std::filesystem::path& path);

// Float32 host weights with the dummy values (fine for small configs; the CUDA backend
// fills device memory directly instead).
// Throws Stopped when `stop` asks (read before each tensor).
ModelWeights make_dummy_weights(const ModelConfig& config, uint64_t seed, const StopToken& stop = {});

}  // namespace pagedgen
