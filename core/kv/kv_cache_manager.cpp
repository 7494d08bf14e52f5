// KvCacheManager: block tables, prefix matching, slot allocation, fork/copy-on-write and
// the memory figures, over the BlockPool.
#include "kv/kv_cache_manager.h"

#include <algorithm>

#include "util/error.h"

namespace pagedgen {

KvCacheManager::KvCacheManager(const KvCacheConfig& config)
    : block_size_(config.block_size),
      enable_prefix_caching_(config.enable_prefix_caching),
      key_function_(config.key_function),
      pool_(config.num_blocks),
      fill_(static_cast<std::size_t>(config.num_blocks), 0) {
  if (block_size_ < 1 || block_size_ > kMaxBlockSize)
    fail_setting("block_size", "{} is out of range: use 1 to {} tokens per block", block_size_, kMaxBlockSize);
  PG_CHECK(key_function_ != nullptr, "no prefix key function");
}

int32_t KvCacheManager::num_blocks_for_tokens(int64_t num_tokens) const {
  return static_cast<int32_t>((num_tokens + block_size_ - 1) / block_size_);
}

KvCacheStats KvCacheManager::stats() const {
  KvCacheStats stats = counts_;
  stats.num_evictions = pool_.num_evictions();
  stats.num_used_blocks = pool_.num_used_blocks();
  stats.peak_used_blocks = pool_.peak_used_blocks();
  stats.num_allocated_slots = int64_t{pool_.num_used_blocks()} * block_size_;
  return stats;
}

const KvCacheManager::SequenceBlocks& KvCacheManager::at(uint64_t seq_id) const {
  const auto it = sequences_.find(seq_id);
  PG_CHECK(it != sequences_.end(), "sequence {} has no blocks", seq_id);
  return it->second;
}

KvCacheManager::SequenceBlocks& KvCacheManager::at(uint64_t seq_id) {
  return const_cast<SequenceBlocks&>(static_cast<const KvCacheManager&>(*this).at(seq_id));
}

PrefixMatch KvCacheManager::match_prefix(std::span<const TokenId> known_tokens) const {
  PrefixMatch match;
  if (!enable_prefix_caching_ || known_tokens.empty()) return match;
  match.num_lookup_blocks = static_cast<int32_t>((known_tokens.size() - 1) / block_size_);
  uint64_t parent_key = kRootPrefixKey;
  bool full_block_in_flight = false;
  for (int32_t i = 0; i < match.num_lookup_blocks; ++i) {
    const auto tokens = known_tokens.subspan(static_cast<std::size_t>(i) * block_size_, block_size_);
    const uint64_t key = key_function_(parent_key, tokens);
    const CacheLookup hit = pool_.lookup(key, parent_key, tokens);
    if (!hit.block) {
      match.num_collisions = hit.collision ? 1 : 0;
      full_block_in_flight = !hit.collision && in_flight_keys_.contains(key);
      break;
    }
    match.blocks.push_back(*hit.block);
    match.keys.push_back(key);
    parent_key = key;
  }
  match.num_cached_tokens = static_cast<int32_t>(match.blocks.size()) * block_size_;
  // The tokens after the full hits, short of a whole block and of the last known token.
  const auto rest = known_tokens.subspan(static_cast<std::size_t>(match.num_cached_tokens));
  const auto num_candidates = std::min<std::size_t>(static_cast<std::size_t>(block_size_ - 1), rest.size() - 1);
  const std::optional<PartialLookup> partial = pool_.longest_partial(parent_key, rest.first(num_candidates));
  // Wait for a full block being computed; for a block to copy from only when the cache has
  // none to offer (waiting on every sibling's block would admit one request per step).
  const bool partial_in_flight =
      !partial && num_candidates > 0 && in_flight_children_.contains({parent_key, rest.front()});
  match.next_block_in_flight = full_block_in_flight || partial_in_flight;
  if (!match.next_block_in_flight && partial) {
    match.partial_block = partial->block;
    match.num_partial_tokens = partial->num_tokens;
    match.num_cached_tokens += partial->num_tokens;
  }
  return match;
}

bool KvCacheManager::can_allocate(const PrefixMatch& match, int32_t num_new_tokens) const {
  // Hit blocks at count 0 sit in the free queue: taking them uses free blocks too.
  // So does holding a partial match's source at count 0 until its copy ran.
  const auto num_hits_at_zero = std::ranges::count_if(match.blocks, [&](BlockId b) { return pool_.ref_count(b) == 0; });
  const bool source_at_zero = match.partial_block && pool_.ref_count(*match.partial_block) == 0;
  const int64_t num_new_blocks =
      num_blocks_for_tokens(int64_t{match.num_cached_tokens} + num_new_tokens) - static_cast<int64_t>(match.blocks.size());
  return num_new_blocks + num_hits_at_zero + (source_at_zero ? 1 : 0) <= pool_.num_free_blocks();
}

std::optional<BlockCopy> KvCacheManager::allocate(uint64_t seq_id, std::span<const TokenId> known_tokens,
                                                  const PrefixMatch& match, int32_t num_new_tokens) {
  PG_CHECK(!sequences_.contains(seq_id), "sequence {} already has blocks", seq_id);
  PG_CHECK(num_new_tokens >= 0 && match.num_cached_tokens + num_new_tokens <= std::ssize(known_tokens),
           "sequence {}: {} cached + {} new tokens but only {} known", seq_id, match.num_cached_tokens,
           num_new_tokens, known_tokens.size());
  PG_CHECK(can_allocate(match, num_new_tokens), "allocate without room for sequence {}", seq_id);
  SequenceBlocks& seq = sequences_[seq_id];
  for (BlockId block : match.blocks) {
    if (pool_.ref_count(block) == 0) counts_.num_filled_slots += fill_[block];
    pool_.add_ref(block);
    PG_CHECK(fill_[block] == block_size_, "cached block {} holds {} of {} slots", block, fill_[block], block_size_);
  }
  seq.table = match.blocks;
  seq.num_slots = match.num_cached_tokens - match.num_partial_tokens;
  seq.keys = match.keys;
  for (std::size_t i = 0; i < match.keys.size(); ++i) seq.first_tokens.push_back(known_tokens[i * block_size_]);
  seq.num_committed_blocks = static_cast<int32_t>(match.keys.size());
  counts_.num_lookup_blocks += match.num_lookup_blocks;
  counts_.num_hit_blocks += std::ssize(match.blocks);
  counts_.num_hit_tokens += match.num_cached_tokens;
  counts_.num_key_collisions += match.num_collisions;
  counts_.num_logical_slots += seq.num_slots;
  std::optional<BlockCopy> copy;
  if (match.partial_block) {
    // Hold the source first, so taking a block for the copy cannot evict it.
    const BlockId source = *match.partial_block;
    PG_CHECK(pool_.is_cached(source) && match.num_partial_tokens > 0 && match.num_partial_tokens < block_size_,
             "partial match of {} tokens on block {}", match.num_partial_tokens, source);
    if (pool_.ref_count(source) == 0) counts_.num_filled_slots += fill_[source];
    pool_.add_ref(source);
    copy_sources_.push_back(source);
    const BlockId owned = *pool_.allocate();
    fill_[owned] = match.num_partial_tokens;
    seq.table.push_back(owned);
    seq.num_slots += match.num_partial_tokens;
    counts_.num_filled_slots += match.num_partial_tokens;
    counts_.num_logical_slots += match.num_partial_tokens;
    ++counts_.num_partial_hits;
    counts_.num_partial_tokens += match.num_partial_tokens;
    copy = BlockCopy{.src = source, .dst = owned};
  }
  grow(seq, num_new_tokens);

  if (enable_prefix_caching_) {
    // The known tokens' remaining full blocks will be computed by this sequence: mark them
    // in flight so a sequence sharing them waits for them instead of computing them again.
    const int64_t num_full_blocks = std::ssize(known_tokens) / block_size_;
    for (int64_t i = std::ssize(seq.keys); i < num_full_blocks; ++i) {
      const uint64_t parent_key = i == 0 ? kRootPrefixKey : seq.keys.back();
      const auto tokens = known_tokens.subspan(static_cast<std::size_t>(i) * block_size_, block_size_);
      seq.keys.push_back(key_function_(parent_key, tokens));
      seq.first_tokens.push_back(tokens.front());
    }
    add_in_flight(seq);
  }
  return copy;
}

void KvCacheManager::release_copy_sources() {
  for (BlockId source : copy_sources_) {
    pool_.release(source);
    if (pool_.ref_count(source) == 0) counts_.num_filled_slots -= fill_[source];
  }
  copy_sources_.clear();
}

bool KvCacheManager::needs_copy_on_write(const SequenceBlocks& seq) const {
  return seq.num_slots % block_size_ != 0 && pool_.ref_count(seq.table.back()) > 1;
}

bool KvCacheManager::can_append_slots(uint64_t seq_id, int32_t num_new_tokens) const {
  const SequenceBlocks& seq = at(seq_id);
  const int64_t num_new_blocks = num_blocks_for_tokens(int64_t{seq.num_slots} + num_new_tokens) - std::ssize(seq.table);
  const bool copies = num_new_tokens > 0 && needs_copy_on_write(seq);
  return num_new_blocks + (copies ? 1 : 0) <= pool_.num_free_blocks();
}

std::optional<BlockCopy> KvCacheManager::append_slots(uint64_t seq_id, int32_t num_new_tokens) {
  PG_CHECK(num_new_tokens >= 0 && can_append_slots(seq_id, num_new_tokens), "append_slots without room for sequence {}", seq_id);
  SequenceBlocks& seq = at(seq_id);
  std::optional<BlockCopy> copy;
  if (num_new_tokens > 0 && needs_copy_on_write(seq)) {
    // Other sequences keep reading the shared block, so its fill never changes; this
    // sequence continues in a private copy holding the same tokens.
    const BlockId shared = seq.table.back();
    const BlockId owned = *pool_.allocate();
    PG_CHECK(fill_[shared] == seq.num_slots % block_size_, "shared block {} holds {} slots, sequence {} sees {}",
             shared, fill_[shared], seq_id, seq.num_slots % block_size_);
    fill_[owned] = fill_[shared];
    counts_.num_filled_slots += fill_[owned];
    pool_.release(shared);
    seq.table.back() = owned;
    copy = BlockCopy{.src = shared, .dst = owned};
    ++counts_.num_cow_copies;
  }
  grow(seq, num_new_tokens);
  return copy;
}

void KvCacheManager::grow(SequenceBlocks& seq, int32_t num_new_tokens) {
  int32_t remaining = num_new_tokens;
  while (remaining > 0) {
    const int32_t offset = seq.num_slots % block_size_;
    if (offset == 0) {
      const std::optional<BlockId> block = pool_.allocate();
      PG_CHECK(block.has_value(), "out of blocks after a successful check");
      fill_[*block] = 0;
      seq.table.push_back(*block);
    }
    const BlockId last = seq.table.back();
    PG_CHECK(pool_.ref_count(last) == 1 && fill_[last] == offset, "writing into block {} (count {}, fill {}, offset {})",
             last, pool_.ref_count(last), fill_[last], offset);
    const int32_t num_taken = std::min(remaining, block_size_ - offset);
    fill_[last] += num_taken;
    seq.num_slots += num_taken;
    counts_.num_filled_slots += num_taken;
    counts_.num_logical_slots += num_taken;
    remaining -= num_taken;
  }
}

void KvCacheManager::commit_full_blocks(uint64_t seq_id, std::span<const TokenId> tokens, int32_t num_computed_tokens) {
  if (!enable_prefix_caching_) return;
  SequenceBlocks& seq = at(seq_id);
  PG_CHECK(num_computed_tokens <= seq.num_slots && num_computed_tokens <= std::ssize(tokens),
           "sequence {}: {} computed tokens, {} slots, {} tokens", seq_id, num_computed_tokens, seq.num_slots, tokens.size());
  const int32_t num_full_blocks = num_computed_tokens / block_size_;
  for (int32_t i = seq.num_committed_blocks; i < num_full_blocks; ++i) {
    const uint64_t parent_key = i == 0 ? kRootPrefixKey : seq.keys[static_cast<std::size_t>(i) - 1];
    const auto block_tokens = tokens.subspan(static_cast<std::size_t>(i) * block_size_, block_size_);
    const uint64_t key = key_function_(parent_key, block_tokens);
    if (i < std::ssize(seq.keys)) {
      PG_CHECK(seq.keys[i] == key, "sequence {}: block {} tokens changed after admission", seq_id, i);
      remove_in_flight(seq, static_cast<std::size_t>(i));
    } else {
      seq.keys.push_back(key);
      seq.first_tokens.push_back(block_tokens.front());
    }
    pool_.cache_block(seq.table[i], key, parent_key, block_tokens);
    seq.num_committed_blocks = i + 1;
  }
}

void KvCacheManager::fork(uint64_t parent_id, uint64_t child_id) {
  PG_CHECK(!sequences_.contains(child_id), "fork into sequence {} that already has blocks", child_id);
  SequenceBlocks child = at(parent_id);
  for (BlockId block : child.table) pool_.add_ref(block);  // all at count > 0: fills already counted
  counts_.num_logical_slots += child.num_slots;
  add_in_flight(child);
  sequences_.emplace(child_id, std::move(child));
}

void KvCacheManager::free(uint64_t seq_id) {
  const SequenceBlocks& seq = at(seq_id);
  for (auto it = seq.table.rbegin(); it != seq.table.rend(); ++it) {
    pool_.release(*it);
    if (pool_.ref_count(*it) == 0) counts_.num_filled_slots -= fill_[*it];
  }
  counts_.num_logical_slots -= seq.num_slots;
  remove_in_flight(seq);
  sequences_.erase(seq_id);
}

void KvCacheManager::add_in_flight(const SequenceBlocks& seq) {
  for (std::size_t i = static_cast<std::size_t>(seq.num_committed_blocks); i < seq.keys.size(); ++i) {
    ++in_flight_keys_[seq.keys[i]];
    ++in_flight_children_[{i == 0 ? kRootPrefixKey : seq.keys[i - 1], seq.first_tokens[i]}];
  }
}

void KvCacheManager::remove_in_flight(const SequenceBlocks& seq, std::size_t block_index) {
  auto key = in_flight_keys_.find(seq.keys[block_index]);
  auto child = in_flight_children_.find({block_index == 0 ? kRootPrefixKey : seq.keys[block_index - 1],
                                         seq.first_tokens[block_index]});
  PG_CHECK(key != in_flight_keys_.end() && child != in_flight_children_.end(), "block {} of a sequence not in flight",
           block_index);
  if (--key->second == 0) in_flight_keys_.erase(key);
  if (--child->second == 0) in_flight_children_.erase(child);
}

void KvCacheManager::remove_in_flight(const SequenceBlocks& seq) {
  for (std::size_t i = static_cast<std::size_t>(seq.num_committed_blocks); i < seq.keys.size(); ++i) remove_in_flight(seq, i);
}

std::span<const BlockId> KvCacheManager::block_table(uint64_t seq_id) const { return at(seq_id).table; }

int32_t KvCacheManager::num_slots(uint64_t seq_id) const { return at(seq_id).num_slots; }

int32_t KvCacheManager::filled_slots(BlockId block) const {
  return pool_.ref_count(block) > 0 ? fill_[static_cast<std::size_t>(block)] : 0;
}

std::vector<uint64_t> KvCacheManager::sequence_ids() const {
  std::vector<uint64_t> ids;
  ids.reserve(sequences_.size());
  for (const auto& [id, seq] : sequences_) ids.push_back(id);
  std::ranges::sort(ids);
  return ids;
}

}  // namespace pagedgen
