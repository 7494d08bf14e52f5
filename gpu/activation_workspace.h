// ActivationWorkspace: the device buffers a forward pass works in (model/layer_op.h names
// them), sized per token row and per logits row and grown when a step needs more, and the
// attention partials (paged_attention_kernel.h), sized once from the model.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backend/activation_widths.h"
#include "device_buffer.h"
#include "device_dtype.h"
#include "model/model_config.h"

namespace pagedgen::gpu {

// Float32 unless the dtype is named.
struct ActivationBuffers {
  // Per token row:
  DeviceBuffer x;        // (tokens, hidden) residual stream
  DeviceBuffer xn;       // (tokens, hidden) dtype: normed GEMM input
  DeviceBuffer qkv;      // (tokens, q_dim + 2 * kv_dim) fused QKV GEMM output
  DeviceBuffer q;        // (tokens, q_dim) after RoPE
  DeviceBuffer k;        // (tokens, kv_dim) after RoPE
  DeviceBuffer v;        // (tokens, kv_dim)
  DeviceBuffer attn;     // (tokens, q_dim) dtype: attention output, the wo GEMM input
  DeviceBuffer delta;    // (tokens, hidden) a sub-block's output, added to x by the next norm
  DeviceBuffer gate_up;  // (tokens, 2 * ffn) fused gate/up GEMM output
  DeviceBuffer act;      // (tokens, ffn) dtype: silu(gate) * up, the w_down GEMM input
  // Per logits row:
  DeviceBuffer head_in;  // (rows, hidden) dtype: final-normed rows
  DeviceBuffer logits;   // (rows, vocab)
  // Attention partials:
  DeviceBuffer partial_out;  // [max_partials][num_heads][head_dim]
  DeviceBuffer partial_max;  // [max_partials][num_heads]
  DeviceBuffer partial_sum;  // [max_partials][num_heads]
};

class ActivationWorkspace {
 public:
  // Allocates the buffers of num_tokens token rows and num_logits logits rows (both >= 1),
  // once `stream` has drained, then the partials. `config` must outlive the workspace.
  ActivationWorkspace(const ModelConfig& config, DeviceDtype dtype, std::size_t num_tokens, std::size_t num_logits,
                      cudaStream_t stream);

  // Grows the buffers to hold num_tokens token rows and num_logits logits rows; before a
  // buffer moves, waits for `stream` (queued kernels may still read the old one).
  void ensure(std::size_t num_tokens, std::size_t num_logits, cudaStream_t stream);

  const ActivationBuffers& buffers() const { return buffers_; }
  // Partial results one attention launch may hold (attention_plan.h, tensor_attention_plan.h).
  int64_t max_partials() const { return max_partials_; }
  // Counts the moves of the buffers' addresses (a CUDA graph keeps the old ones).
  uint64_t generation() const { return generation_; }
  std::size_t bytes() const;

 private:
  void allocate_token_rows(std::size_t num_tokens);
  void allocate_logits_rows(std::size_t num_logits);
  void allocate_partials();

  const ModelConfig& config_;
  ActivationWidths widths_;
  std::size_t dtype_bytes_;
  ActivationBuffers buffers_;
  std::size_t token_capacity_ = 0;
  std::size_t logits_capacity_ = 0;
  int64_t max_partials_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace pagedgen::gpu
