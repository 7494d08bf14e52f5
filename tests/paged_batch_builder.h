// Test helper: sequences on a paged KV pool whose block ids are handed out in a scrambled
// (non-contiguous, non-monotonic) order, and the StepBatch of one forward step over them.
// It plays the engine's part so that backend tests can vary block size, chunking and
// batch composition on their own. Misuse (a sequence never added, a pool run dry) throws
// std::out_of_range, which fails the test case that made it (the next ones still run),
// never reads out of bounds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "step/step_batch.h"

namespace pagedgen::test {

class PagedBatchBuilder {
 public:
  PagedBatchBuilder(int32_t block_size, int32_t num_blocks, uint32_t seed)
      : block_size_(block_size), num_blocks_(num_blocks) {
    free_blocks_.resize(static_cast<std::size_t>(num_blocks));
    std::iota(free_blocks_.begin(), free_blocks_.end(), 0);
    std::mt19937 rng(seed);
    std::shuffle(free_blocks_.begin(), free_blocks_.end(), rng);
  }

  // A new empty sequence; returns its index.
  std::size_t add_sequence() {
    sequences_.emplace_back();
    return sequences_.size() - 1;
  }

  // A new sequence that starts with the first num_blocks blocks of `parent`, as a prefix
  // cache hit gives them (whole blocks the parent has filled, never written again);
  // returns its index.
  std::size_t add_sequence_sharing(std::size_t parent, std::size_t num_blocks) {
    const Sequence& p = sequence(parent);
    const std::size_t num_shared_tokens = num_blocks * static_cast<std::size_t>(block_size_);
    if (p.num_tokens < num_shared_tokens)
      throw std::out_of_range(fmt::format("PagedBatchBuilder: sequence {} has {} tokens, not {} full blocks", parent,
                                          p.num_tokens, num_blocks));
    Sequence s{num_shared_tokens,
               {p.block_table.begin(), p.block_table.begin() + static_cast<std::ptrdiff_t>(num_blocks)}};
    sequences_.push_back(std::move(s));
    return sequences_.size() - 1;
  }

  std::size_t num_tokens(std::size_t seq) const { return sequence(seq).num_tokens; }
  const std::vector<int32_t>& block_table(std::size_t seq) const { return sequence(seq).block_table; }

  // One step: each (sequence, new token ids) pair appends its tokens, in the given order.
  // The last token of every listed sequence gets a logits row.
  StepBatch step(const std::vector<std::pair<std::size_t, std::vector<int32_t>>>& chunks) {
    StepBatch batch;
    batch.block_size = block_size_;
    batch.num_seqs = static_cast<int32_t>(chunks.size());
    batch.query_start.push_back(0);
    std::size_t max_blocks = 1;
    for (const auto& chunk : chunks) check_added(chunk.first);  // before any sequence changes
    for (const auto& [seq, tokens] : chunks) {
      Sequence& s = sequences_[seq];
      for (int32_t token : tokens) {
        const auto pos = static_cast<int32_t>(s.num_tokens);
        if (pos % block_size_ == 0) {
          if (free_blocks_.empty())
            throw std::out_of_range(fmt::format("PagedBatchBuilder: all {} blocks are in use", num_blocks_));
          s.block_table.push_back(free_blocks_.back());
          free_blocks_.pop_back();
        }
        batch.token_ids.push_back(token);
        batch.positions.push_back(pos);
        batch.slot_mapping.push_back(static_cast<int64_t>(s.block_table[static_cast<std::size_t>(pos / block_size_)]) *
                                         block_size_ +
                                     pos % block_size_);
        ++s.num_tokens;
      }
      batch.query_start.push_back(static_cast<int32_t>(batch.token_ids.size()));
      batch.context_lens.push_back(static_cast<int32_t>(s.num_tokens));
      batch.logits_rows.push_back(static_cast<int32_t>(batch.token_ids.size()) - 1);
      max_blocks = std::max(max_blocks, s.block_table.size());
    }
    batch.num_tokens = static_cast<int32_t>(batch.token_ids.size());
    batch.max_blocks_per_seq = static_cast<int32_t>(max_blocks);
    for (const auto& [seq, tokens] : chunks) {
      std::vector<int32_t> row = sequences_[seq].block_table;
      row.resize(max_blocks, 0);  // padding is never read: positions bound what is visible
      batch.block_tables.insert(batch.block_tables.end(), row.begin(), row.end());
    }
    return batch;
  }

 private:
  struct Sequence {
    std::size_t num_tokens = 0;
    std::vector<int32_t> block_table;
  };
  const Sequence& sequence(std::size_t seq) const {
    check_added(seq);
    return sequences_[seq];
  }
  void check_added(std::size_t seq) const {
    if (seq >= sequences_.size())
      throw std::out_of_range(
          fmt::format("PagedBatchBuilder: sequence {} was never added (add_sequence() "
                      "was called {} times)",
                      seq, sequences_.size()));
  }

  int32_t block_size_;
  int32_t num_blocks_;
  std::vector<int32_t> free_blocks_;  // handed out from the back
  std::vector<Sequence> sequences_;
};

}  // namespace pagedgen::test
