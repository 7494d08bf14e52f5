// The CUDA backend's construction and its Backend methods: the KV pools (device_kv_pools.h),
// block copies, steps submitted and collected; a step's forward pass is cuda_forward.cpp's.
#include "cuda_backend.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>

#include "backend/kv_kind_sizes.h"
#include "backend/kv_pool_shape.h"
#include "cuda_backend_impl.h"
#include "cuda_check.h"
#include "model/layer_program.h"
#include "paged_attention_kernel.h"
#include "util/byte_units.h"
#include "util/error.h"

namespace pagedgen::gpu {

CudaBackend::Impl::Impl(const ModelConfig& c, const CudaBackendOptions& o)
    : config(c), options(o), program(layer_program(c)), attention(program_attention(program)) {
  CudaBackend::check_supported(c);
  CUDA_CHECK(cudaSetDevice(o.device));
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  gemm.emplace(stream, o.dtype);
  if (StepProfiler::requested()) profiler.emplace(stream);
}

CudaBackend::Impl::~Impl() {
  if (stream != nullptr) cudaStreamSynchronize(stream);
  if (profiler) {
    try {
      fmt::print(stderr, "{}", profiler->summary());
    } catch (...) {  // stderr gone: nothing to report to
    }
    profiler.reset();
  }
  gemm.reset();
  if (stream != nullptr) cudaStreamDestroy(stream);
}

void CudaBackend::Impl::allocate_activations() {
  activations.emplace(config, options.dtype, static_cast<std::size_t>(std::max(1, options.max_batch_tokens)),
                      static_cast<std::size_t>(std::max(1, options.max_logits_rows)), stream);
}

std::size_t CudaBackend::Impl::activation_bytes() const {
  return gemm->workspace_bytes() + step_uploads.device_bytes() + decode_rows.device_bytes() + sampler.device_bytes() +
         activations->bytes();
}

CudaBackend::CudaBackend(const ModelConfig& config, std::span<const RawTensor> tensors, const std::string& source,
                         const CudaBackendOptions& options)
    : impl_(std::make_unique<Impl>(config, options)) {
  impl_->weights.emplace(DeviceWeights::upload(config, tensors, source, options.dtype, impl_->stream));
  impl_->allocate_activations();
}

CudaBackend::CudaBackend(const ModelConfig& config, uint64_t dummy_seed, const CudaBackendOptions& options)
    : impl_(std::make_unique<Impl>(config, options)) {
  impl_->weights.emplace(DeviceWeights::dummy(config, dummy_seed, options.dtype, impl_->stream));
  impl_->allocate_activations();
}

CudaBackend::~CudaBackend() = default;

void CudaBackend::check_supported(const ModelConfig& config) {
  // Every architecture pagedgen reads (model_config.h) runs; what the kernels bound is below.
  if (!attention_supports_head_dim(config.head_dim))
    fail_setting("device",
                 "cannot run this model: the CUDA backend runs head dimensions 64, 96, 128 and 256 and "
                 "this model's is {}; run it on the CPU",
                 config.head_dim);
  if (config.num_heads / config.num_kv_heads > kAttentionMaxRows)
    fail_setting("device",
                 "cannot run this model: the CUDA backend runs up to {} query heads per KV head and "
                 "this model has {}; run it on the CPU",
                 kAttentionMaxRows, config.num_heads / config.num_kv_heads);
  if (config.rope_dim > 512)
    fail_setting("device",
                 "cannot run this model: the CUDA backend rotates at most 512 dimensions per head and this "
                 "model rotates {}; run it on the CPU",
                 config.rope_dim);
}

std::size_t CudaBackend::kv_bytes_per_block(std::size_t block_size) const {
  return impl_->config.kv_bytes_per_token(device_dtype_bytes(impl_->options.dtype)) * block_size;
}

std::vector<int32_t> CudaBackend::kv_kind_windows() const { return pagedgen::kv_kind_windows(impl_->config); }

std::size_t CudaBackend::kv_kind_bytes_per_block(KvKindId kind, std::size_t block_size) const {
  return kv_kind_bytes(impl_->config, kind, kv_bytes_per_block(block_size));
}

void CudaBackend::allocate_kv_pool(std::size_t num_blocks, std::size_t block_size) {
  Impl& m = *impl_;
  m.kv_pools.allocate(KvPoolShape::one_kind(m.config, num_blocks, block_size), device_dtype_bytes(m.options.dtype),
                      m.stream);
}

void CudaBackend::allocate_kv_pools(std::span<const int32_t> kind_num_blocks, std::size_t block_size) {
  Impl& m = *impl_;
  m.kv_pools.allocate(KvPoolShape::by_kind(m.config, kind_num_blocks, block_size), device_dtype_bytes(m.options.dtype),
                      m.stream);
}

void CudaBackend::forward(const StepBatch& batch, std::span<float> logits) {
  Impl& m = *impl_;
  PG_CHECK(m.num_in_flight == 0, "forward() while {} steps are in flight", m.num_in_flight);
  m.queue_forward(batch, logits.size(), {});
  if (batch.num_tokens > 0 && !logits.empty())
    CUDA_CHECK(cudaMemcpyAsync(logits.data(), m.activations->buffers().logits.data(), logits.size_bytes(),
                               cudaMemcpyDeviceToHost, m.stream));
  CUDA_CHECK(cudaStreamSynchronize(m.stream));
}

std::vector<SampledToken> CudaBackend::step(const StepBatch& batch, const SamplingBatch& sampling) {
  submit(batch, sampling, {});
  return collect();
}

void CudaBackend::submit(const StepBatch& batch, const SamplingBatch& sampling,
                         std::span<const OverlapToken> overlap_tokens) {
  Impl& m = *impl_;
  PG_CHECK(m.num_in_flight < 2, "a third step submitted before the first was collected");
  const auto vocab = static_cast<int32_t>(m.config.vocab_size);
  const auto num_logits_rows = static_cast<int32_t>(batch.logits_rows.size());
  if (m.profiler) m.profiler->begin_step(batch.num_tokens == batch.num_seqs, batch.num_tokens);
  m.queue_forward(batch, batch.logits_rows.size() * static_cast<std::size_t>(vocab), overlap_tokens);
  m.profiled(ProfiledPiece::kSampling, [&] {
    m.sampler.enqueue(m.activations->buffers().logits.as<float>(), num_logits_rows, vocab, sampling, m.stream);
  });
  if (m.profiler) m.profiler->end_step();
  ++m.num_in_flight;
}

std::vector<SampledToken> CudaBackend::collect() {
  Impl& m = *impl_;
  PG_CHECK(m.num_in_flight > 0, "collect with no step submitted");
  --m.num_in_flight;
  std::vector<SampledToken> tokens = m.sampler.collect();
  if (m.profiler) m.profiler->finish_step();
  return tokens;
}

void CudaBackend::copy_blocks(std::span<const BlockCopy> copies) {
  impl_->kv_pools.copy_blocks(copies, impl_->step_uploads, impl_->stream);
}

DeviceMemoryReport CudaBackend::device_memory() const {
  return DeviceMemoryReport{static_cast<int64_t>(impl_->weights->bytes()),
                            static_cast<int64_t>(impl_->kv_pools.bytes()),
                            static_cast<int64_t>(impl_->activation_bytes())};
}

int64_t CudaBackend::vocab_size() const { return impl_->config.vocab_size; }

int32_t CudaBackend::kv_pool_blocks(const KvPoolBudget& budget, std::size_t block_size) const {
  const std::size_t per_block = kv_bytes_per_block(block_size);
  if (budget.num_blocks) return *budget.num_blocks;
  if (budget.bytes) return num_blocks_in(*budget.bytes, per_block, block_size);
  const std::size_t bytes = kv_budget_bytes(budget.device_memory_fraction);
  if (bytes < per_block)
    fail_setting("gpu_memory_utilization",
                 "{} leaves {} after weights and activations, less than one KV block of "
                 "{}; raise it or lower the tokens per step (max_batch_tokens)",
                 budget.device_memory_fraction, format_bytes(bytes), format_bytes(per_block));
  return static_cast<int32_t>(std::min<std::size_t>(bytes / per_block, INT32_MAX));
}

std::string CudaBackend::device() const {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, impl_->options.device));
  return fmt::format("{} (sm_{}{}, {})", prop.name, prop.major, prop.minor, format_bytes(prop.totalGlobalMem));
}

std::size_t CudaBackend::kv_budget_bytes(double utilization) const {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const double budget = utilization * static_cast<double>(total_bytes) - static_cast<double>(total_bytes - free_bytes);
  return budget > 0 ? static_cast<std::size_t>(budget) : 0;
}

}  // namespace pagedgen::gpu
