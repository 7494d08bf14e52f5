#include "backend/step_batch_check.h"

#include <algorithm>

#include "util/error.h"

namespace pagedgen {

namespace {

// One kind's slot mapping and block tables against its pool.
void check_kind_tables(const StepBatch& batch, KvKindId kind, const KvLayout& layout) {
  const auto num_tokens = static_cast<std::size_t>(batch.num_tokens);
  const auto num_seqs = static_cast<std::size_t>(batch.num_seqs);
  const std::span<const int64_t> slot_mapping = batch.kind_slot_mapping(kind);
  const std::span<const int32_t> block_tables = batch.kind_block_tables(kind);
  PG_CHECK(batch.block_size == layout.block_size, "batch block size {} but the pool's is {}", batch.block_size,
           layout.block_size);
  PG_CHECK(slot_mapping.size() == num_tokens, "kind {}'s slot mapping disagrees with num_tokens {}", kind, num_tokens);
  PG_CHECK(block_tables.size() == num_seqs * static_cast<std::size_t>(batch.max_blocks_per_seq),
           "kind {}'s block tables disagree with num_seqs {}", kind, num_seqs);
  for (std::size_t t = 0; t < num_tokens; ++t) {
    const int64_t slot = slot_mapping[t];
    PG_CHECK(slot >= 0 && split_slot(slot, layout.block_size).block_id < layout.num_blocks,
             "token {} maps to slot {} outside a pool of {} blocks", t, slot, layout.num_blocks);
  }
  for (std::size_t s = 0; s < num_seqs; ++s) {
    PG_CHECK(batch.query_start[s] <= batch.query_start[s + 1], "query_start decreases at sequence {}", s);
    const int32_t* table = block_tables.data() + s * static_cast<std::size_t>(batch.max_blocks_per_seq);
    int32_t max_position = -1;
    for (int32_t t = batch.query_start[s]; t < batch.query_start[s + 1]; ++t) {
      const int32_t pos = batch.positions[static_cast<std::size_t>(t)];
      PG_CHECK(pos >= 0 && pos < batch.context_lens[s], "token {} at position {} outside its sequence's context of {}",
               t, pos, batch.context_lens[s]);
      max_position = std::max(max_position, pos);
    }
    const int64_t num_visible_blocks = (int64_t{max_position} + layout.block_size) / layout.block_size;
    PG_CHECK(num_visible_blocks <= batch.max_blocks_per_seq, "position {} needs more blocks than the table's {}",
             max_position, batch.max_blocks_per_seq);
    for (int64_t b = 0; b < num_visible_blocks; ++b)
      PG_CHECK(table[b] >= 0 && table[b] < layout.num_blocks, "sequence {} lists block {} outside a pool of {} blocks",
               s, table[b], layout.num_blocks);
  }
}

}  // namespace

void check_step_batch(const StepBatch& batch, std::span<const KvLayout> kind_layouts, int64_t vocab_size,
                      std::size_t logits_size) {
  const auto num_tokens = static_cast<std::size_t>(batch.num_tokens);
  const auto num_seqs = static_cast<std::size_t>(batch.num_seqs);
  PG_CHECK(!kind_layouts.empty() && batch.window_kinds.size() + 1 == kind_layouts.size(),
           "a batch of {} layer kinds for pools of {}", batch.window_kinds.size() + 1, kind_layouts.size());
  PG_CHECK(batch.token_ids.size() == num_tokens && batch.positions.size() == num_tokens,
           "token arrays disagree with num_tokens {}", num_tokens);
  PG_CHECK(batch.query_start.size() == num_seqs + 1 && batch.context_lens.size() == num_seqs,
           "sequence arrays disagree with num_seqs {}", num_seqs);
  PG_CHECK(batch.query_start.front() == 0 && batch.query_start.back() == batch.num_tokens,
           "query_start must run from 0 to num_tokens");
  PG_CHECK(logits_size == batch.logits_rows.size() * static_cast<std::size_t>(vocab_size),
           "logits buffer of {} floats for {} rows of vocab {}", logits_size, batch.logits_rows.size(), vocab_size);
  for (int32_t row : batch.logits_rows)
    PG_CHECK(row >= 0 && row < batch.num_tokens, "logits row {} outside the batch's {} tokens", row, batch.num_tokens);
  for (int32_t id : batch.token_ids)
    if (id < 0 || id >= vocab_size) fail("token id {} is outside the vocabulary (size {})", id, vocab_size);
  for (std::size_t kind = 0; kind < kind_layouts.size(); ++kind)
    check_kind_tables(batch, static_cast<KvKindId>(kind), kind_layouts[kind]);
}

}  // namespace pagedgen
