// KvCacheManager: block tables, prefix matching, slot allocation, fork/copy-on-write,
// window releases and the memory figures, over one BlockPool per layer kind.
#include "kv/kv_cache_manager.h"

#include <algorithm>
#include <utility>

#include "util/error.h"

namespace pagedgen {

KvCacheManager::KvCacheManager(const KvCacheConfig& config)
    : block_size_(config.block_size),
      enable_prefix_caching_(config.enable_prefix_caching),
      key_function_(config.key_function) {
  if (block_size_ < 1 || block_size_ > kMaxBlockSize)
    fail_setting("block_size", "{} is out of range: use 1 to {} tokens per block", block_size_, kMaxBlockSize);
  PG_CHECK(key_function_ != nullptr, "no prefix key function");
  kinds_.push_back(Kind{.window = 0, .pool = BlockPool(config.num_blocks),
                        .fill = std::vector<int32_t>(static_cast<std::size_t>(config.num_blocks), 0)});
  for (const KvWindowPool& w : config.window_kinds) {
    PG_CHECK(w.window > 0, "a window kind of window {}", w.window);
    kinds_.push_back(Kind{.window = w.window, .pool = BlockPool(w.num_blocks),
                          .fill = std::vector<int32_t>(static_cast<std::size_t>(w.num_blocks), 0)});
  }
}

const KvCacheManager::Kind& KvCacheManager::kind_at(KvKindId kind) const {
  PG_CHECK(kind >= 0 && kind < num_kinds(), "layer kind {} of {}", kind, num_kinds());
  return kinds_[static_cast<std::size_t>(kind)];
}

int32_t KvCacheManager::num_blocks_for_tokens(int64_t num_tokens) const {
  return static_cast<int32_t>((num_tokens + block_size_ - 1) / block_size_);
}

int32_t KvCacheManager::num_blocks_alone(KvKindId kind, int64_t num_tokens, int32_t max_chunk_tokens) const {
  const int32_t all = num_blocks_for_tokens(num_tokens + 1);
  const int32_t window = kind_at(kind).window;
  if (window == 0) return all;
  // A step computing n tokens from c holds the blocks touching c - window + 1 .. c + n - 1:
  // window - 1 + n positions, which touch at most ceil(that / block_size) + 1 blocks.
  const int64_t chunk = std::min<int64_t>(max_chunk_tokens, num_tokens + 1);
  return std::min(all, num_blocks_for_tokens(window - 1 + chunk) + 1);
}

int32_t KvCacheManager::first_reachable_block(const Kind& kind, int64_t position) const {
  if (kind.window == 0) return 0;
  return static_cast<int32_t>(std::max<int64_t>(0, position - kind.window + 1) / block_size_);
}

KvCacheStats KvCacheManager::stats() const {
  KvCacheStats stats = counts_;
  const BlockPool& pool0 = kinds_.front().pool;
  stats.num_evictions = pool0.num_evictions();
  stats.num_used_blocks = pool0.num_used_blocks();
  stats.peak_used_blocks = pool0.peak_used_blocks();
  stats.num_allocated_slots = int64_t{pool0.num_used_blocks()} * block_size_;
  stats.num_filled_slots = kinds_.front().num_filled_slots;
  for (const Kind& kind : kinds_)
    stats.kinds.push_back(KvKindStats{.window = kind.window, .num_blocks = kind.pool.num_blocks(),
                                      .num_used_blocks = kind.pool.num_used_blocks(),
                                      .peak_used_blocks = kind.pool.peak_used_blocks(),
                                      .num_filled_slots = kind.num_filled_slots,
                                      .num_released_blocks = kind.num_released_blocks});
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

void KvCacheManager::hold(Kind& kind, BlockId block) {
  if (kind.pool.ref_count(block) == 0) kind.num_filled_slots += kind.fill[block];
  kind.pool.add_ref(block);
}

void KvCacheManager::release(Kind& kind, BlockId block) {
  kind.pool.release(block);
  if (kind.pool.ref_count(block) == 0) kind.num_filled_slots -= kind.fill[block];
}

PrefixMatch KvCacheManager::match_prefix(std::span<const TokenId> known_tokens) const {
  PrefixMatch match;
  match.window_hits.resize(kinds_.size() - 1);
  if (!enable_prefix_caching_ || known_tokens.empty()) return match;
  const BlockPool& pool = kinds_.front().pool;
  match.num_lookup_blocks = static_cast<int32_t>((known_tokens.size() - 1) / block_size_);
  uint64_t parent_key = kRootPrefixKey;
  bool full_block_in_flight = false;
  for (int32_t i = 0; i < match.num_lookup_blocks; ++i) {
    const auto tokens = known_tokens.subspan(static_cast<std::size_t>(i) * block_size_, block_size_);
    const uint64_t key = key_function_(parent_key, tokens);
    const CacheLookup hit = pool.lookup(key, parent_key, tokens);
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
  const std::optional<PartialLookup> partial = pool.longest_partial(parent_key, rest.first(num_candidates));
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
  match_windows(match, known_tokens);
  return match;
}

PrefixMatch KvCacheManager::without_partial(const PrefixMatch& match, std::span<const TokenId> known_tokens) const {
  PrefixMatch shorter = match;
  shorter.num_cached_tokens -= std::exchange(shorter.num_partial_tokens, 0);
  shorter.partial_block.reset();
  match_windows(shorter, known_tokens);
  return shorter;
}

// Longest first: the match kind 0 found, then without its partial block, then one full
// block shorter at a time (an empty match needs nothing).
void KvCacheManager::match_windows(PrefixMatch& match, std::span<const TokenId> known_tokens) const {
  if (kinds_.size() == 1) return;
  while (!find_window_hits(match, known_tokens)) {
    if (match.partial_block) {
      match.partial_block.reset();
      match.num_partial_tokens = 0;
    } else {
      match.blocks.pop_back();
      match.keys.pop_back();
    }
    match.num_cached_tokens = static_cast<int32_t>(match.blocks.size()) * block_size_;
  }
}

// Whether every window kind's pool caches the blocks its next query (at num_cached_tokens)
// reaches before the hit point, and the partial match's source; fills match.window_hits.
bool KvCacheManager::find_window_hits(PrefixMatch& match, std::span<const TokenId> known_tokens) const {
  const auto num_hits = static_cast<int32_t>(match.blocks.size());
  const auto parent_of = [&](int32_t i) { return i == 0 ? kRootPrefixKey : match.keys[static_cast<std::size_t>(i) - 1]; };
  match.window_hits.assign(kinds_.size() - 1, {});
  for (std::size_t k = 1; k < kinds_.size(); ++k) {
    const Kind& kind = kinds_[k];
    PrefixMatch::WindowHit& hit = match.window_hits[k - 1];
    hit.first_block = std::min(first_reachable_block(kind, match.num_cached_tokens), num_hits);
    for (int32_t i = hit.first_block; i < num_hits; ++i) {
      const auto tokens = known_tokens.subspan(static_cast<std::size_t>(i) * block_size_, block_size_);
      const CacheLookup found = kind.pool.lookup(match.keys[static_cast<std::size_t>(i)], parent_of(i), tokens);
      if (!found.block) return false;
      hit.blocks.push_back(*found.block);
    }
    if (match.partial_block) {
      const BlockPool& pool0 = kinds_.front().pool;
      const CacheLookup found = kind.pool.lookup(pool0.cache_key(*match.partial_block), parent_of(num_hits),
                                                 pool0.cached_tokens(*match.partial_block));
      if (!found.block) return false;
      hit.partial_block = found.block;
    }
  }
  return true;
}

bool KvCacheManager::can_allocate(const PrefixMatch& match, int32_t num_new_tokens) const {
  PG_CHECK(match.window_hits.size() + 1 == kinds_.size(), "a match for {} window kinds, the cache has {}",
           match.window_hits.size(), kinds_.size() - 1);
  // Hit blocks at count 0 sit in the free queue: taking them uses free blocks too.
  // So does holding a partial match's source at count 0 until its copy ran.
  const int64_t num_new_blocks =
      num_blocks_for_tokens(int64_t{match.num_cached_tokens} + num_new_tokens) - static_cast<int64_t>(match.blocks.size());
  const auto fits = [&](const Kind& kind, std::span<const BlockId> hits, std::optional<BlockId> source) {
    const auto num_hits_at_zero = std::ranges::count_if(hits, [&](BlockId b) { return kind.pool.ref_count(b) == 0; });
    const bool source_at_zero = source && kind.pool.ref_count(*source) == 0;
    return num_new_blocks + num_hits_at_zero + (source_at_zero ? 1 : 0) <= kind.pool.num_free_blocks();
  };
  if (!fits(kinds_.front(), match.blocks, match.partial_block)) return false;
  for (std::size_t k = 1; k < kinds_.size(); ++k)
    if (!fits(kinds_[k], match.window_hits[k - 1].blocks, match.window_hits[k - 1].partial_block)) return false;
  return true;
}

std::vector<BlockCopy> KvCacheManager::allocate(uint64_t seq_id, std::span<const TokenId> known_tokens,
                                                const PrefixMatch& match, int32_t num_new_tokens) {
  PG_CHECK(!sequences_.contains(seq_id), "sequence {} already has blocks", seq_id);
  PG_CHECK(num_new_tokens >= 0 && match.num_cached_tokens + num_new_tokens <= std::ssize(known_tokens),
           "sequence {}: {} cached + {} new tokens but only {} known", seq_id, match.num_cached_tokens,
           num_new_tokens, known_tokens.size());
  PG_CHECK(can_allocate(match, num_new_tokens), "allocate without room for sequence {}", seq_id);
  PG_CHECK(match.num_partial_tokens == 0 ||
               (match.num_partial_tokens > 0 && match.num_partial_tokens < block_size_ && match.partial_block),
           "partial match of {} tokens", match.num_partial_tokens);
  SequenceBlocks& seq = sequences_[seq_id];
  seq.kinds.resize(kinds_.size());
  std::vector<BlockCopy> copies;
  // A kind's table: the hits from first_block on (the entries before it never held), then
  // the partial match's copy. The source is held first, so taking a block for the copy
  // cannot evict it.
  const auto take_hits = [&](KvKindId k, int32_t first_block, std::span<const BlockId> hits,
                             std::optional<BlockId> source) {
    Kind& kind = kinds_[static_cast<std::size_t>(k)];
    KindTable& t = seq.kinds[static_cast<std::size_t>(k)];
    t.table.assign(static_cast<std::size_t>(first_block), 0);
    t.num_released = first_block;
    for (BlockId block : hits) {
      hold(kind, block);
      PG_CHECK(kind.fill[block] == block_size_, "cached block {} holds {} of {} slots", block, kind.fill[block],
               block_size_);
      t.table.push_back(block);
    }
    if (!source) return;
    PG_CHECK(kind.pool.is_cached(*source), "partial match on block {}, not cached", *source);
    hold(kind, *source);
    kind.copy_sources.push_back(*source);
    const BlockId owned = *kind.pool.allocate();
    kind.fill[owned] = match.num_partial_tokens;
    kind.num_filled_slots += match.num_partial_tokens;
    t.table.push_back(owned);
    copies.push_back(BlockCopy{.src = *source, .dst = owned, .kind = k});
  };
  take_hits(0, 0, match.blocks, match.partial_block);
  for (std::size_t k = 1; k < kinds_.size(); ++k) {
    const PrefixMatch::WindowHit& hit = match.window_hits[k - 1];
    PG_CHECK(hit.first_block + std::ssize(hit.blocks) == std::ssize(match.blocks) &&
                 hit.partial_block.has_value() == match.partial_block.has_value(),
             "the window hits of kind {} disagree with the match", k);
    take_hits(static_cast<KvKindId>(k), hit.first_block, hit.blocks, hit.partial_block);
  }
  seq.num_slots = match.num_cached_tokens;
  seq.keys = match.keys;
  for (std::size_t i = 0; i < match.keys.size(); ++i) seq.first_tokens.push_back(known_tokens[i * block_size_]);
  seq.num_committed_blocks = static_cast<int32_t>(match.keys.size());
  counts_.num_lookup_blocks += match.num_lookup_blocks;
  counts_.num_hit_blocks += std::ssize(match.blocks);
  counts_.num_hit_tokens += match.num_cached_tokens;
  counts_.num_key_collisions += match.num_collisions;
  counts_.num_logical_slots += seq.num_slots;
  if (match.partial_block) {
    ++counts_.num_partial_hits;
    counts_.num_partial_tokens += match.num_partial_tokens;
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
  return copies;
}

void KvCacheManager::release_copy_sources() {
  for (Kind& kind : kinds_) {
    for (BlockId source : kind.copy_sources) release(kind, source);
    kind.copy_sources.clear();
  }
}

bool KvCacheManager::needs_copy_on_write(const Kind& kind, const KindTable& table, int32_t num_slots) const {
  return num_slots % block_size_ != 0 && kind.pool.ref_count(table.table.back()) > 1;
}

bool KvCacheManager::can_append_slots(uint64_t seq_id, int32_t num_new_tokens) const {
  const SequenceBlocks& seq = at(seq_id);
  const int64_t num_new_blocks =
      num_blocks_for_tokens(int64_t{seq.num_slots} + num_new_tokens) - std::ssize(seq.kinds.front().table);
  for (std::size_t k = 0; k < kinds_.size(); ++k) {
    const bool copies = num_new_tokens > 0 && needs_copy_on_write(kinds_[k], seq.kinds[k], seq.num_slots);
    if (num_new_blocks + (copies ? 1 : 0) > kinds_[k].pool.num_free_blocks()) return false;
  }
  return true;
}

std::vector<BlockCopy> KvCacheManager::append_slots(uint64_t seq_id, int32_t num_new_tokens) {
  PG_CHECK(num_new_tokens >= 0 && can_append_slots(seq_id, num_new_tokens), "append_slots without room for sequence {}", seq_id);
  SequenceBlocks& seq = at(seq_id);
  std::vector<BlockCopy> copies;
  for (std::size_t k = 0; k < kinds_.size() && num_new_tokens > 0; ++k) {
    Kind& kind = kinds_[k];
    KindTable& t = seq.kinds[k];
    if (!needs_copy_on_write(kind, t, seq.num_slots)) continue;
    // Other sequences keep reading the shared block, so its fill never changes; this
    // sequence continues in a private copy holding the same tokens.
    const BlockId shared = t.table.back();
    const BlockId owned = *kind.pool.allocate();
    PG_CHECK(kind.fill[shared] == seq.num_slots % block_size_, "shared block {} holds {} slots, sequence {} sees {}",
             shared, kind.fill[shared], seq_id, seq.num_slots % block_size_);
    kind.fill[owned] = kind.fill[shared];
    kind.num_filled_slots += kind.fill[owned];
    kind.pool.release(shared);
    t.table.back() = owned;
    copies.push_back(BlockCopy{.src = shared, .dst = owned, .kind = static_cast<KvKindId>(k)});
    ++counts_.num_cow_copies;
  }
  grow(seq, num_new_tokens);
  return copies;
}

void KvCacheManager::release_unreachable(uint64_t seq_id, int32_t num_computed_tokens) {
  SequenceBlocks& seq = at(seq_id);
  PG_CHECK(num_computed_tokens <= seq.num_slots, "sequence {}: {} computed tokens, {} slots", seq_id,
           num_computed_tokens, seq.num_slots);
  for (std::size_t k = 1; k < kinds_.size(); ++k) {
    Kind& kind = kinds_[k];
    KindTable& t = seq.kinds[k];
    const int32_t first = std::min(first_reachable_block(kind, num_computed_tokens), static_cast<int32_t>(t.table.size()));
    // Oldest first: the blocks furthest from any later hit point are the first evicted.
    for (; t.num_released < first; ++t.num_released) {
      BlockId& block = t.table[static_cast<std::size_t>(t.num_released)];
      release(kind, block);
      block = 0;
      ++kind.num_released_blocks;
    }
  }
}

void KvCacheManager::grow(SequenceBlocks& seq, int32_t num_new_tokens) {
  int32_t remaining = num_new_tokens;
  while (remaining > 0) {
    const int32_t offset = seq.num_slots % block_size_;
    const int32_t num_taken = std::min(remaining, block_size_ - offset);
    for (std::size_t k = 0; k < kinds_.size(); ++k) {
      Kind& kind = kinds_[k];
      KindTable& t = seq.kinds[k];
      if (offset == 0) {
        const std::optional<BlockId> block = kind.pool.allocate();
        PG_CHECK(block.has_value(), "out of blocks after a successful check");
        kind.fill[*block] = 0;
        t.table.push_back(*block);
      }
      const BlockId last = t.table.back();
      PG_CHECK(kind.pool.ref_count(last) == 1 && kind.fill[last] == offset,
               "writing into block {} of kind {} (count {}, fill {}, offset {})", last, k, kind.pool.ref_count(last),
               kind.fill[last], offset);
      kind.fill[last] += num_taken;
      kind.num_filled_slots += num_taken;
    }
    seq.num_slots += num_taken;
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
    for (std::size_t k = 0; k < kinds_.size(); ++k)
      if (i >= seq.kinds[k].num_released)
        kinds_[k].pool.cache_block(seq.kinds[k].table[static_cast<std::size_t>(i)], key, parent_key, block_tokens);
    seq.num_committed_blocks = i + 1;
  }
}

void KvCacheManager::fork(uint64_t parent_id, uint64_t child_id) {
  PG_CHECK(!sequences_.contains(child_id), "fork into sequence {} that already has blocks", child_id);
  SequenceBlocks child = at(parent_id);
  for (std::size_t k = 0; k < kinds_.size(); ++k) {  // all held at count > 0: fills already counted
    const KindTable& t = child.kinds[k];
    for (std::size_t i = static_cast<std::size_t>(t.num_released); i < t.table.size(); ++i) kinds_[k].pool.add_ref(t.table[i]);
  }
  counts_.num_logical_slots += child.num_slots;
  add_in_flight(child);
  sequences_.emplace(child_id, std::move(child));
}

void KvCacheManager::free(uint64_t seq_id) {
  const SequenceBlocks& seq = at(seq_id);
  for (std::size_t k = 0; k < kinds_.size(); ++k) {
    const KindTable& t = seq.kinds[k];
    for (auto i = static_cast<std::ptrdiff_t>(t.table.size()) - 1; i >= t.num_released; --i)
      release(kinds_[k], t.table[static_cast<std::size_t>(i)]);
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

std::span<const BlockId> KvCacheManager::block_table(uint64_t seq_id, KvKindId kind) const {
  kind_at(kind);
  return at(seq_id).kinds[static_cast<std::size_t>(kind)].table;
}

int32_t KvCacheManager::num_released_blocks(uint64_t seq_id, KvKindId kind) const {
  kind_at(kind);
  return at(seq_id).kinds[static_cast<std::size_t>(kind)].num_released;
}

int32_t KvCacheManager::num_slots(uint64_t seq_id) const { return at(seq_id).num_slots; }

int32_t KvCacheManager::filled_slots(BlockId block, KvKindId kind) const {
  const Kind& k = kind_at(kind);
  return k.pool.ref_count(block) > 0 ? k.fill[static_cast<std::size_t>(block)] : 0;
}

std::vector<uint64_t> KvCacheManager::sequence_ids() const {
  std::vector<uint64_t> ids;
  ids.reserve(sequences_.size());
  for (const auto& [id, seq] : sequences_) ids.push_back(id);
  std::ranges::sort(ids);
  return ids;
}

}  // namespace pagedgen
