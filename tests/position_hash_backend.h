// A test backend that runs no model: each row's token id is (input token * 31 + position)
// mod 1000, a function of the row alone, so a request's tokens never depend on the block
// size, the batch or the pool. At one block size it can fail the rows of one input token
// (no token: unusable logits, the request's error record), to make one request's output
// differ there. It keeps the sampling parameters of the rows it saw.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace pagedgen::test {

class PositionHashBackend final : public Backend {
 public:
  PositionHashBackend() = default;
  PositionHashBackend(int32_t fail_at_block_size, TokenId fail_token)
      : fail_at_block_size_(fail_at_block_size), fail_token_(fail_token) {}

  static TokenId next_token(TokenId input, int32_t position) { return (input * 31 + position) % 1000; }

  std::string name() const override { return "position-hash"; }
  std::size_t kv_bytes_per_block(std::size_t block_size) const override { return 8 * block_size; }
  void allocate_kv_pool(std::size_t, std::size_t) override {}
  void copy_blocks(std::span<const BlockCopy>) override {}

  std::vector<SampledToken> step(const StepBatch& batch, const SamplingBatch& sampling) override {
    std::vector<SampledToken> tokens;
    for (const SamplingRow& row : sampling.rows) {
      params_.push_back(*row.params);
      const auto t = static_cast<std::size_t>(batch.logits_rows[static_cast<std::size_t>(row.logits_row)]);
      if (batch.block_size == fail_at_block_size_ && batch.token_ids[t] == fail_token_)
        tokens.push_back({});
      else
        tokens.push_back({next_token(batch.token_ids[t], batch.positions[t]), std::nullopt});
    }
    return tokens;
  }

  // The sampling parameters of every row, in the order the steps gave them.
  const std::vector<SamplingParams>& sampled_params() const { return params_; }

 private:
  std::optional<int32_t> fail_at_block_size_;
  TokenId fail_token_ = 0;
  std::vector<SamplingParams> params_;
};

}  // namespace pagedgen::test
