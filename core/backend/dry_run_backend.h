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

namespace pagedgen {

class DryRunBackend final : public Backend {
 public:
  // `kv_bytes_per_token`: what the real backend would store per token (ModelConfig::kv_bytes_per_token).
  explicit DryRunBackend(std::size_t kv_bytes_per_token) : kv_bytes_per_token_(kv_bytes_per_token) {}

  std::string name() const override { return "dry-run"; }
  std::size_t kv_bytes_per_block(std::size_t block_size) const override { return kv_bytes_per_token_ * block_size; }
  void allocate_kv_pool(std::size_t, std::size_t) override {}
  void copy_blocks(std::span<const BlockCopy>) override {}
  std::vector<SampledToken> step(const StepBatch& batch, const SamplingBatch& sampling) override;

 private:
  std::size_t kv_bytes_per_token_;
  uint64_t num_sampled_ = 0;
};

}  // namespace pagedgen
