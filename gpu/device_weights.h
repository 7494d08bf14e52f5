// A model's weights in device memory, in the layout the CUDA backend's GEMMs want
// (model/device_weight_layout.h): Q, K and V stacked into one matrix per layer, gate and up
// into another, matrices in the device dtype, norm weights and biases in float32. Streamed
// from a model file's tensors one chunk at a time (their stored bytes, dequantized on the
// device), or dummy values generated on the device.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "device_dtype.h"
#include "model/model_config.h"
#include "model/raw_tensor.h"
#include "model/tensor_chunks.h"

namespace pagedgen::gpu {

// The matrices and float32 vectors of one layer; the optional ones are nullptr for the
// architectures without them (model/model_weights.h's LayerWeights says which).
struct DeviceLayerWeights {
  const float* attn_norm;       // (hidden)
  const void* wqkv;             // (q_dim + 2 * kv_dim, hidden): wq rows, then wk, then wv
  const float* bqkv;            // (q_dim + 2 * kv_dim) or nullptr without QKV bias
  const float* q_norm;          // (head_dim) or nullptr without q/k norms
  const float* k_norm;          // (head_dim) or nullptr
  const void* wo;               // (hidden, q_dim)
  const float* attn_post_norm;  // (hidden) or nullptr without post norms
  const float* ffn_norm;        // (hidden)
  const void* w_gate_up;        // (2 * intermediate, hidden): w_gate rows, then w_up
  const void* w_down;           // (hidden, intermediate)
  const float* ffn_post_norm;   // (hidden) or nullptr
};

// The weights' element type for a --dtype.
WeightDtype weight_dtype(DeviceDtype dtype);

class DeviceWeights {
 public:
  // Streams `tensors` (a model file's, named `source` in messages; model/raw_tensor.h) to
  // the device in `dtype`, one tensor at a time: each chunk of stored bytes goes from the
  // file mapping through a fixed pinned staging buffer and is converted by a kernel, and
  // the tensor's file pages are given back once copied. Host memory beyond the mapping:
  // the staging buffers (2 x 64 MiB at most). Throws Error naming a missing or malformed
  // tensor before anything is allocated on the device.
  static DeviceWeights upload(const ModelConfig& config, std::span<const RawTensor> tensors, const std::string& source,
                              DeviceDtype dtype, cudaStream_t stream);
  // The dummy weights of model/dummy_weights.h, generated on the device.
  static DeviceWeights dummy(const ModelConfig& config, uint64_t seed, DeviceDtype dtype, cudaStream_t stream);

  const void* token_embd = nullptr;             // (vocab, hidden)
  const float* output_norm = nullptr;           // (hidden)
  const void* output = nullptr;                 // (vocab, hidden); token_embd when tied
  const float* rope_inv_freq = nullptr;         // (rope_dim / 2) RopeTable::kFull
  const float* window_rope_inv_freq = nullptr;  // (rope_dim / 2) RopeTable::kWindow (rope_inv_freq when the same)
  std::vector<DeviceLayerWeights> layers;

  std::size_t bytes() const { return typed_.bytes() + float32_.bytes(); }

 private:
  DeviceBuffer typed_;    // every matrix, in the dtype
  DeviceBuffer float32_;  // norms, biases, RoPE frequencies
};

}  // namespace pagedgen::gpu
