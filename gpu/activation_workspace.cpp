#include "activation_workspace.h"

#include <algorithm>

#include "cuda_check.h"
#include "paged_attention_kernel.h"

namespace pagedgen::gpu {

namespace {

// Partial attention results of one launch (attention_plan.h): enough for decode at batch
// 256 over 4k-token contexts with an 8B model; longer steps take several launches.
constexpr std::size_t kPartialWorkspaceBytes = std::size_t{64} << 20;

}  // namespace

ActivationWorkspace::ActivationWorkspace(const ModelConfig& config, DeviceDtype dtype, std::size_t num_tokens,
                                         std::size_t num_logits, cudaStream_t stream)
    : config_(config), widths_(activation_widths(config)), dtype_bytes_(device_dtype_bytes(dtype)) {
  ensure(num_tokens, num_logits, stream);
  allocate_partials();
}

void ActivationWorkspace::ensure(std::size_t num_tokens, std::size_t num_logits, cudaStream_t stream) {
  if (num_tokens <= token_capacity_ && num_logits <= logits_capacity_) return;
  CUDA_CHECK(cudaStreamSynchronize(stream));  // queued kernels may still read the old buffers
  ++generation_;
  if (num_tokens > token_capacity_) allocate_token_rows(num_tokens);
  if (num_logits > logits_capacity_) allocate_logits_rows(num_logits);
}

void ActivationWorkspace::allocate_token_rows(std::size_t n) {
  const auto [hidden, q_dim, kv_dim, ffn] = widths_;
  const std::size_t f = sizeof(float);
  const std::size_t t = dtype_bytes_;
  ActivationBuffers& b = buffers_;
  b.x = DeviceBuffer(n * hidden * f);
  b.xn = DeviceBuffer(n * hidden * t);
  b.qkv = DeviceBuffer(n * (q_dim + 2 * kv_dim) * f);
  b.q = DeviceBuffer(n * q_dim * f);
  b.k = DeviceBuffer(n * kv_dim * f);
  b.v = DeviceBuffer(n * kv_dim * f);
  b.attn = DeviceBuffer(n * q_dim * t);
  b.delta = DeviceBuffer(n * hidden * f);
  b.gate_up = DeviceBuffer(n * 2 * ffn * f);
  b.act = DeviceBuffer(n * ffn * t);
  token_capacity_ = n;
}

void ActivationWorkspace::allocate_logits_rows(std::size_t n) {
  buffers_.head_in = DeviceBuffer(n * widths_.hidden * dtype_bytes_);
  buffers_.logits = DeviceBuffer(n * static_cast<std::size_t>(config_.vocab_size) * sizeof(float));
  logits_capacity_ = n;
}

// As many partials as kPartialWorkspaceBytes holds, and at least one tile's at the longest
// context (plan_attention's bound).
void ActivationWorkspace::allocate_partials() {
  const auto heads = static_cast<std::size_t>(config_.num_heads);
  const auto head_dim = static_cast<std::size_t>(config_.head_dim);
  const std::size_t bytes_per_partial = heads * (head_dim + 2) * sizeof(float);
  const auto group = static_cast<int32_t>(config_.num_heads / config_.num_kv_heads);
  const int64_t one_tile = int64_t{attention_queries_per_item(group)} *
                           attention_partitions(static_cast<int32_t>(config_.context_length - 1));
  max_partials_ = std::max<int64_t>(static_cast<int64_t>(kPartialWorkspaceBytes / bytes_per_partial), one_tile);
  const auto n = static_cast<std::size_t>(max_partials_);
  buffers_.partial_out = DeviceBuffer(n * heads * head_dim * sizeof(float));
  buffers_.partial_max = DeviceBuffer(n * heads * sizeof(float));
  buffers_.partial_sum = DeviceBuffer(n * heads * sizeof(float));
}

std::size_t ActivationWorkspace::bytes() const {
  const ActivationBuffers& b = buffers_;
  std::size_t bytes = 0;
  for (const DeviceBuffer* buffer : {&b.x, &b.xn, &b.qkv, &b.q, &b.k, &b.v, &b.attn, &b.delta, &b.gate_up, &b.act,
                                     &b.head_in, &b.logits, &b.partial_out, &b.partial_max, &b.partial_sum})
    bytes += buffer->bytes();
  return bytes;
}

}  // namespace pagedgen::gpu
