// LayerKindBlocks: one layer kind's pool, block fills and per-sequence tables.
#include "kv/layer_kind_blocks.h"

#include <algorithm>
#include <utility>

#include "util/error.h"

namespace pagedgen {

LayerKindBlocks::LayerKindBlocks(KvKindId kind, int32_t window, int32_t num_blocks, int32_t block_size)
    : kind_(kind),
      window_(window),
      block_size_(block_size),
      pool_(num_blocks),
      fill_(static_cast<std::size_t>(num_blocks), 0) {}

KvKindStats LayerKindBlocks::stats() const {
  return KvKindStats{.window = window_,
                     .num_blocks = pool_.num_blocks(),
                     .num_used_blocks = pool_.num_used_blocks(),
                     .peak_used_blocks = pool_.peak_used_blocks(),
                     .num_filled_slots = num_filled_slots_,
                     .num_released_blocks = num_released_blocks_};
}

int32_t LayerKindBlocks::filled_slots(BlockId block) const {
  return pool_.ref_count(block) > 0 ? fill_[static_cast<std::size_t>(block)] : 0;
}

int32_t LayerKindBlocks::first_reachable_block(int64_t position) const {
  if (window_ == 0) return 0;
  return static_cast<int32_t>(std::max<int64_t>(0, position - window_ + 1) / block_size_);
}

int32_t LayerKindBlocks::num_blocks_alone(int64_t num_tokens, int32_t max_chunk_tokens) const {
  const auto num_blocks_for = [&](int64_t n) { return static_cast<int32_t>((n + block_size_ - 1) / block_size_); };
  const int32_t all = num_blocks_for(num_tokens + 1);
  if (window_ == 0) return all;
  // A step computing n tokens from c holds the blocks touching c - window + 1 .. c + n - 1:
  // window - 1 + n positions, which touch at most ceil(that / block_size) + 1 blocks.
  const int64_t chunk = std::min<int64_t>(max_chunk_tokens, num_tokens + 1);
  return std::min(all, num_blocks_for(window_ - 1 + chunk) + 1);
}

const LayerKindBlocks::SequenceTable& LayerKindBlocks::at(uint64_t seq_id) const {
  const auto it = tables_.find(seq_id);
  PG_CHECK(it != tables_.end(), "sequence {} has no blocks in kind {}", seq_id, kind_);
  return it->second;
}

LayerKindBlocks::SequenceTable& LayerKindBlocks::at(uint64_t seq_id) {
  return const_cast<SequenceTable&>(static_cast<const LayerKindBlocks&>(*this).at(seq_id));
}

void LayerKindBlocks::hold(BlockId block) {
  if (pool_.ref_count(block) == 0) num_filled_slots_ += fill_[block];
  pool_.add_ref(block);
}

void LayerKindBlocks::release(BlockId block) {
  pool_.release(block);
  if (pool_.ref_count(block) == 0) num_filled_slots_ -= fill_[block];
}

BlockId LayerKindBlocks::take_free_block(int32_t fill) {
  const std::optional<BlockId> block = pool_.allocate();
  PG_CHECK(block.has_value(), "out of blocks of kind {} after a successful check", kind_);
  fill_[*block] = fill;
  num_filled_slots_ += fill;
  return *block;
}

// --- admission ---

bool LayerKindBlocks::can_take(const HitBlocks& hits, int64_t num_new_blocks) const {
  const auto num_hits_at_zero = std::ranges::count_if(hits.blocks, [&](BlockId b) { return pool_.ref_count(b) == 0; });
  const bool source_at_zero = hits.partial_source && pool_.ref_count(*hits.partial_source) == 0;
  return num_new_blocks + num_hits_at_zero + (source_at_zero ? 1 : 0) <= pool_.num_free_blocks();
}

std::optional<BlockCopy> LayerKindBlocks::take_hits(uint64_t seq_id, const HitBlocks& hits,
                                                    int32_t num_partial_tokens) {
  PG_CHECK(!tables_.contains(seq_id), "sequence {} already has blocks in kind {}", seq_id, kind_);
  SequenceTable& t = tables_[seq_id];
  t.blocks.assign(static_cast<std::size_t>(hits.first_block), 0);
  t.num_released = hits.first_block;
  for (BlockId block : hits.blocks) {
    hold(block);
    PG_CHECK(fill_[block] == block_size_, "cached block {} holds {} of {} slots", block, fill_[block], block_size_);
    t.blocks.push_back(block);
  }
  if (!hits.partial_source) return std::nullopt;
  // The source is held first, so taking a block for the copy cannot evict it.
  const BlockId source = *hits.partial_source;
  PG_CHECK(pool_.is_cached(source), "partial match on block {}, not cached", source);
  hold(source);
  copy_sources_.push_back(source);
  const BlockId owned = take_free_block(num_partial_tokens);
  t.blocks.push_back(owned);
  return BlockCopy{.src = source, .dst = owned, .kind = kind_};
}

void LayerKindBlocks::release_copy_sources() {
  for (BlockId source : copy_sources_) release(source);
  copy_sources_.clear();
}

// --- later steps ---

bool LayerKindBlocks::needs_copy_on_write(uint64_t seq_id, int32_t num_slots) const {
  return num_slots % block_size_ != 0 && pool_.ref_count(at(seq_id).blocks.back()) > 1;
}

BlockCopy LayerKindBlocks::copy_on_write(uint64_t seq_id, int32_t num_slots) {
  // Other sequences keep reading the shared block, so its fill never changes; this
  // sequence continues in a private copy holding the same tokens.
  SequenceTable& t = at(seq_id);
  const BlockId shared = t.blocks.back();
  PG_CHECK(fill_[shared] == num_slots % block_size_, "shared block {} holds {} slots, sequence {} sees {}", shared,
           fill_[shared], seq_id, num_slots % block_size_);
  const BlockId owned = take_free_block(fill_[shared]);
  pool_.release(shared);
  t.blocks.back() = owned;
  return BlockCopy{.src = shared, .dst = owned, .kind = kind_};
}

void LayerKindBlocks::grow(uint64_t seq_id, int32_t num_slots, int32_t num_new_tokens) {
  SequenceTable& t = at(seq_id);
  for (int32_t remaining = num_new_tokens; remaining > 0;) {
    const int32_t offset = num_slots % block_size_;
    const int32_t num_taken = std::min(remaining, block_size_ - offset);
    if (offset == 0) t.blocks.push_back(take_free_block(0));
    const BlockId last = t.blocks.back();
    PG_CHECK(pool_.ref_count(last) == 1 && fill_[last] == offset,
             "writing into block {} of kind {} (count {}, fill {}, offset {})", last, kind_, pool_.ref_count(last),
             fill_[last], offset);
    fill_[last] += num_taken;
    num_filled_slots_ += num_taken;
    num_slots += num_taken;
    remaining -= num_taken;
  }
}

void LayerKindBlocks::release_unreachable(uint64_t seq_id, int32_t num_computed_tokens) {
  SequenceTable& t = at(seq_id);
  const int32_t first = std::min(first_reachable_block(num_computed_tokens), static_cast<int32_t>(t.blocks.size()));
  // Oldest first: the blocks furthest from any later hit point are the first evicted.
  for (; t.num_released < first; ++t.num_released) {
    BlockId& block = t.blocks[static_cast<std::size_t>(t.num_released)];
    release(block);
    block = 0;
    ++num_released_blocks_;
  }
}

void LayerKindBlocks::cache_block(uint64_t seq_id, int32_t block_index, uint64_t key, uint64_t parent_key,
                                  std::span<const TokenId> tokens) {
  const SequenceTable& t = at(seq_id);
  if (block_index >= t.num_released)
    pool_.cache_block(t.blocks[static_cast<std::size_t>(block_index)], key, parent_key, tokens);
}

void LayerKindBlocks::fork(uint64_t parent_id, uint64_t child_id) {
  PG_CHECK(!tables_.contains(child_id), "fork into sequence {} that already has blocks in kind {}", child_id, kind_);
  SequenceTable child = at(parent_id);
  // All held at count > 0: their fills are already counted.
  for (std::size_t i = static_cast<std::size_t>(child.num_released); i < child.blocks.size(); ++i)
    pool_.add_ref(child.blocks[i]);
  tables_.emplace(child_id, std::move(child));
}

void LayerKindBlocks::free(uint64_t seq_id) {
  const SequenceTable& t = at(seq_id);
  for (auto i = static_cast<std::ptrdiff_t>(t.blocks.size()) - 1; i >= t.num_released; --i)
    release(t.blocks[static_cast<std::size_t>(i)]);
  tables_.erase(seq_id);
}

}  // namespace pagedgen
