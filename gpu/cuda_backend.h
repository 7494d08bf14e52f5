// The CUDA backend: the Backend contract on one GPU. Weights, activations and the paged KV
// pools (K and V per layer as [num_blocks][num_kv_heads][block_size][head_dim], in the
// device dtype; one pool of blocks per layer kind when some layers have a sliding window)
// live on the device; a step runs the model's layer program (model/layer_program.h, the
// same ops the CPU backend runs) with cuBLAS GEMMs and the kernels of
// llama_kernels.h, kv_cache_kernels.h, paged_attention_kernel.h and
// tensor_attention_kernel.h, then samples
// on the device (device_sampler.h) and copies back only the token ids. Steps are queued
// (submit) and their ids collected later, so the engine prepares the next step while one
// runs; decode steps replay CUDA graphs. forward() copies the logits rows instead, for the
// tests and benchmarks that compare them. No CUDA includes: the app uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/logits_backend.h"
#include "device_dtype.h"
#include "model/model_config.h"
#include "model/raw_tensor.h"

namespace pagedgen::gpu {

struct CudaBackendOptions {
  int device = 0;
  DeviceDtype dtype = DeviceDtype::BF16;
  // Activations are allocated up front for this many tokens and logits rows per step (and
  // grown if a step needs more), so that the KV pool can be sized from what is left.
  int32_t max_batch_tokens = 2048;
  int32_t max_logits_rows = 256;
  // Decode steps (one token per sequence, at most max_logits_rows of them) replay CUDA
  // graphs per batch-size bucket (decode_graphs.h); off, they launch the same kernels one
  // by one. Either way they run padded to the bucket, so the output is the same.
  bool cuda_graphs = true;
};

class CudaBackend final : public LogitsBackend {
 public:
  // Streams a model file's tensors (model/raw_tensor.h; `source` names the file in messages)
  // to the device converted to options.dtype, one at a time (device_weights.h): no host copy
  // of the model. `config` must outlive the backend; the tensors' bytes need to live only
  // while the constructor runs.
  CudaBackend(const ModelConfig& config, std::span<const RawTensor> tensors, const std::string& source,
              const CudaBackendOptions& options);
  // Dummy weights (model/dummy_weights.h) generated on the device from `seed`.
  CudaBackend(const ModelConfig& config, uint64_t dummy_seed, const CudaBackendOptions& options);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  std::string device() const override;  // "NVIDIA H200 (sm_90, 141 GiB)"
  std::size_t kv_bytes_per_block(std::size_t block_size) const override;
  // num_blocks, else bytes, else what `device_memory_fraction` of the device leaves after
  // weights and activations.
  int32_t kv_pool_blocks(const KvPoolBudget& budget, std::size_t block_size) const override;
  void allocate_kv_pool(std::size_t num_blocks, std::size_t block_size) override;
  // The model's layer kinds (ModelConfig::kv_kinds), as the CPU backend has them.
  std::vector<int32_t> kv_kind_windows() const override;
  std::size_t kv_kind_bytes_per_block(KvKindId kind, std::size_t block_size) const override;
  void allocate_kv_pools(std::span<const int32_t> kind_num_blocks, std::size_t block_size) override;
  void forward(const StepBatch& batch, std::span<float> logits) override;
  // The forward pass, then every sampling row on the device: the CPU Sampler's tokens from
  // the same logits, with no logits crossing to the host. step() is submit() + collect().
  std::vector<SampledToken> step(const StepBatch& batch, const SamplingBatch& sampling) override;
  // Grammar masks, penalties and logit_bias, and logprobs, on the device (sampling_kernels.h,
  // penalty_kernels.h, logprob_kernels.h).
  bool applies_token_masks() const override { return true; }
  bool applies_penalties() const override { return true; }
  bool computes_logprobs() const override { return true; }
  // Queues the step on the backend's stream and returns: its arrays go through pinned
  // staging buffers, its overlap tokens are read on the device from the ids of the step
  // before, its ids come back into pinned memory.
  void submit(const StepBatch& batch, const SamplingBatch& sampling,
              std::span<const OverlapToken> overlap_tokens) override;
  // Waits for the oldest submitted step's ids (an event, not the whole stream).
  std::vector<SampledToken> collect() override;
  int64_t vocab_size() const override;
  void copy_blocks(std::span<const BlockCopy> copies) override;
  DeviceMemoryReport device_memory() const override;

  // Bytes a KV pool may take so that the device is `utilization` full: utilization * total
  // memory minus what is in use now (this backend's weights and activations, and other
  // processes); 0 when nothing is left.
  std::size_t kv_budget_bytes(double utilization) const;

  // Throws SettingError (device) when the model cannot run on this backend (head_dim, GQA
  // group size, rotated dimensions).
  static void check_supported(const ModelConfig& config);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagedgen::gpu
