// DryRunBackend: a Backend that computes nothing, for `plan`: it holds no K/V and reads no
// weights, and every token it "samples" is a fresh negative id, so generated tokens never
// match a prompt, another sample or each other in the prefix cache. With no tokenizer in
// the engine, every sample then runs to its max_tokens: the most KV memory a run can need.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "step/kv_kinds.h"

namespace pagedgen {

class DryRunBackend final : public Backend {
 public:
  // `kv_bytes_per_token`: what the real backend would store per token over all layers
  // (ModelConfig::kv_bytes_per_token); `kinds` the model's layer kinds (ModelConfig::kv_kinds),
  // whose bytes are their layers' share.
  DryRunBackend(std::size_t kv_bytes_per_token, std::span<const KvKind> kinds);
  // The same kinds and bytes as `sizing` (the backend the run would use).
  explicit DryRunBackend(const Backend& sizing);

  std::string name() const override { return "dry-run"; }
  std::size_t kv_bytes_per_block(std::size_t block_size) const override { return kv_bytes_per_token_ * block_size; }
  std::vector<int32_t> kv_kind_windows() const override { return windows_; }
  std::size_t kv_kind_bytes_per_block(KvKindId kind, std::size_t block_size) const override {
    return kind_bytes_per_token_.at(static_cast<std::size_t>(kind)) * block_size;
  }
  void allocate_kv_pool(std::size_t, std::size_t) override {}
  void allocate_kv_pools(std::span<const int32_t>, std::size_t) override {}
  void copy_blocks(std::span<const BlockCopy>) override {}
  std::vector<SampledToken> step(const StepBatch& batch, const SamplingBatch& sampling) override;

 private:
  std::size_t kv_bytes_per_token_;
  std::vector<int32_t> windows_;                   // [num_kinds]
  std::vector<std::size_t> kind_bytes_per_token_;  // [num_kinds]
  uint64_t num_sampled_ = 0;
};

}  // namespace pagedgen
