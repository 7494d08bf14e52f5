// KvCacheManager: prefix matching, admission and the per-step calls, each a loop over the
// layer kinds' LayerKindBlocks, plus the in-flight prefix blocks and the counted figures.
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
  kinds_.emplace_back(0, 0, config.num_blocks, block_size_);
  for (const KvWindowPool& w : config.window_kinds) {
    PG_CHECK(w.window > 0, "a window kind of window {}", w.window);
    kinds_.emplace_back(static_cast<KvKindId>(kinds_.size()), w.window, w.num_blocks, block_size_);
  }
}

const LayerKindBlocks& KvCacheManager::kind_at(KvKindId kind) const {
  PG_CHECK(kind >= 0 && kind < num_kinds(), "layer kind {} of {}", kind, num_kinds());
  return kinds_[static_cast<std::size_t>(kind)];
}

const KvCacheManager::SequenceState& KvCacheManager::at(uint64_t seq_id) const {
  const auto it = sequences_.find(seq_id);
  PG_CHECK(it != sequences_.end(), "sequence {} has no blocks", seq_id);
  return it->second;
}

KvCacheManager::SequenceState& KvCacheManager::at(uint64_t seq_id) {
  return const_cast<SequenceState&>(static_cast<const KvCacheManager&>(*this).at(seq_id));
}

int32_t KvCacheManager::num_blocks_for_tokens(int64_t num_tokens) const {
  return static_cast<int32_t>((num_tokens + block_size_ - 1) / block_size_);
}

int32_t KvCacheManager::num_blocks_alone(KvKindId kind, int64_t num_tokens, int32_t max_chunk_tokens) const {
  return kind_at(kind).num_blocks_alone(num_tokens, max_chunk_tokens);
}

KvCacheStats KvCacheManager::stats() const {
  KvCacheStats stats = counts_;
  const BlockPool& pool0 = kinds_.front().pool();
  stats.num_evictions = pool0.num_evictions();
  stats.num_used_blocks = pool0.num_used_blocks();
  stats.peak_used_blocks = pool0.peak_used_blocks();
  stats.num_allocated_slots = int64_t{pool0.num_used_blocks()} * block_size_;
  stats.num_filled_slots = kinds_.front().num_filled_slots();
  for (const LayerKindBlocks& kind : kinds_) stats.kinds.push_back(kind.stats());
  return stats;
}

// --- prefix matching ---

PrefixMatch KvCacheManager::match_prefix(std::span<const TokenId> known_tokens) const {
  PrefixMatch match;
  match.window_hits.resize(kinds_.size() - 1);
  if (!enable_prefix_caching_ || known_tokens.empty()) return match;
  const BlockPool& pool = kinds_.front().pool();
  match.num_lookup_blocks = static_cast<int32_t>((known_tokens.size() - 1) / block_size_);
  uint64_t parent_key = kRootPrefixKey;
  bool full_block_in_flight = false;
  for (int32_t i = 0; i < match.num_lookup_blocks; ++i) {
    const auto tokens = known_tokens.subspan(static_cast<std::size_t>(i) * block_size_, block_size_);
    const uint64_t key = key_function_(parent_key, tokens);
    const CacheLookup hit = pool.lookup(key, parent_key, tokens);
    if (!hit.block) {
      match.num_collisions = hit.collision ? 1 : 0;
      full_block_in_flight = !hit.collision && in_flight_.has_key(key);
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
  const bool partial_in_flight = !partial && num_candidates > 0 && in_flight_.has_child({parent_key, rest.front()});
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
  const auto parent_of = [&](int32_t i) {
    return i == 0 ? kRootPrefixKey : match.keys[static_cast<std::size_t>(i) - 1];
  };
  match.window_hits.assign(kinds_.size() - 1, {});
  for (std::size_t k = 1; k < kinds_.size(); ++k) {
    const BlockPool& pool = kinds_[k].pool();
    PrefixMatch::WindowHit& hit = match.window_hits[k - 1];
    hit.first_block = std::min(kinds_[k].first_reachable_block(match.num_cached_tokens), num_hits);
    for (int32_t i = hit.first_block; i < num_hits; ++i) {
      const auto tokens = known_tokens.subspan(static_cast<std::size_t>(i) * block_size_, block_size_);
      const CacheLookup found = pool.lookup(match.keys[static_cast<std::size_t>(i)], parent_of(i), tokens);
      if (!found.block) return false;
      hit.blocks.push_back(*found.block);
    }
    if (match.partial_block) {
      const BlockPool& pool0 = kinds_.front().pool();
      const CacheLookup found = pool.lookup(pool0.cache_key(*match.partial_block), parent_of(num_hits),
                                            pool0.cached_tokens(*match.partial_block));
      if (!found.block) return false;
      hit.partial_block = found.block;
    }
  }
  return true;
}

// --- admission ---

HitBlocks KvCacheManager::hits_of(const PrefixMatch& match, std::size_t k) {
  if (k == 0) return HitBlocks{.first_block = 0, .blocks = match.blocks, .partial_source = match.partial_block};
  const PrefixMatch::WindowHit& hit = match.window_hits[k - 1];
  return HitBlocks{.first_block = hit.first_block, .blocks = hit.blocks, .partial_source = hit.partial_block};
}

bool KvCacheManager::can_allocate(const PrefixMatch& match, int32_t num_new_tokens) const {
  PG_CHECK(match.window_hits.size() + 1 == kinds_.size(), "a match for {} window kinds, the cache has {}",
           match.window_hits.size(), kinds_.size() - 1);
  const int64_t num_new_blocks = num_blocks_for_tokens(int64_t{match.num_cached_tokens} + num_new_tokens) -
                                 static_cast<int64_t>(match.blocks.size());
  for (std::size_t k = 0; k < kinds_.size(); ++k)
    if (!kinds_[k].can_take(hits_of(match, k), num_new_blocks)) return false;
  return true;
}

void KvCacheManager::check_allocation(uint64_t seq_id, std::span<const TokenId> known_tokens, const PrefixMatch& match,
                                      int32_t num_new_tokens) const {
  PG_CHECK(!sequences_.contains(seq_id), "sequence {} already has blocks", seq_id);
  PG_CHECK(num_new_tokens >= 0 && match.num_cached_tokens + num_new_tokens <= std::ssize(known_tokens),
           "sequence {}: {} cached + {} new tokens but only {} known", seq_id, match.num_cached_tokens, num_new_tokens,
           known_tokens.size());
  PG_CHECK(can_allocate(match, num_new_tokens), "allocate without room for sequence {}", seq_id);
  PG_CHECK(match.num_partial_tokens == 0 ||
               (match.num_partial_tokens > 0 && match.num_partial_tokens < block_size_ && match.partial_block),
           "partial match of {} tokens", match.num_partial_tokens);
  for (std::size_t k = 1; k < kinds_.size(); ++k) {
    const PrefixMatch::WindowHit& hit = match.window_hits[k - 1];
    PG_CHECK(hit.first_block + std::ssize(hit.blocks) == std::ssize(match.blocks) &&
                 hit.partial_block.has_value() == match.partial_block.has_value(),
             "the window hits of kind {} disagree with the match", k);
  }
}

void KvCacheManager::count_admission(const PrefixMatch& match) {
  counts_.num_lookup_blocks += match.num_lookup_blocks;
  counts_.num_hit_blocks += std::ssize(match.blocks);
  counts_.num_hit_tokens += match.num_cached_tokens;
  counts_.num_key_collisions += match.num_collisions;
  counts_.num_logical_slots += match.num_cached_tokens;
  if (match.partial_block) {
    ++counts_.num_partial_hits;
    counts_.num_partial_tokens += match.num_partial_tokens;
  }
}

std::vector<BlockCopy> KvCacheManager::allocate(uint64_t seq_id, std::span<const TokenId> known_tokens,
                                                const PrefixMatch& match, int32_t num_new_tokens) {
  check_allocation(seq_id, known_tokens, match, num_new_tokens);
  std::vector<BlockCopy> copies;  // one per kind for a partial match, kind 0's first
  for (std::size_t k = 0; k < kinds_.size(); ++k)
    if (auto copy = kinds_[k].take_hits(seq_id, hits_of(match, k), match.num_partial_tokens)) copies.push_back(*copy);
  SequenceState& seq = sequences_[seq_id];
  seq.num_slots = match.num_cached_tokens;
  seq.chain.keys = match.keys;
  for (std::size_t i = 0; i < match.keys.size(); ++i) seq.chain.first_tokens.push_back(known_tokens[i * block_size_]);
  seq.chain.num_committed_blocks = static_cast<int32_t>(match.keys.size());
  count_admission(match);
  grow(seq_id, seq, num_new_tokens);
  if (enable_prefix_caching_) {
    // The known tokens' remaining full blocks will be computed by this sequence: mark them
    // in flight so a sequence sharing them waits for them instead of computing them again.
    seq.chain.extend(known_tokens, block_size_, key_function_);
    in_flight_.add(seq.chain);
  }
  return copies;
}

void KvCacheManager::release_copy_sources() {
  for (LayerKindBlocks& kind : kinds_) kind.release_copy_sources();
}

// --- later steps ---

bool KvCacheManager::can_append_slots(uint64_t seq_id, int32_t num_new_tokens) const {
  const SequenceState& seq = at(seq_id);
  const int64_t num_new_blocks =
      num_blocks_for_tokens(int64_t{seq.num_slots} + num_new_tokens) - kinds_.front().num_table_blocks(seq_id);
  for (const LayerKindBlocks& kind : kinds_) {
    const bool copies = num_new_tokens > 0 && kind.needs_copy_on_write(seq_id, seq.num_slots);
    if (num_new_blocks + (copies ? 1 : 0) > kind.pool().num_free_blocks()) return false;
  }
  return true;
}

std::vector<BlockCopy> KvCacheManager::append_slots(uint64_t seq_id, int32_t num_new_tokens) {
  PG_CHECK(num_new_tokens >= 0 && can_append_slots(seq_id, num_new_tokens), "append_slots without room for sequence {}",
           seq_id);
  SequenceState& seq = at(seq_id);
  std::vector<BlockCopy> copies;
  for (LayerKindBlocks& kind : kinds_) {
    if (num_new_tokens == 0 || !kind.needs_copy_on_write(seq_id, seq.num_slots)) continue;
    copies.push_back(kind.copy_on_write(seq_id, seq.num_slots));
    ++counts_.num_cow_copies;
  }
  grow(seq_id, seq, num_new_tokens);
  return copies;
}

void KvCacheManager::grow(uint64_t seq_id, SequenceState& seq, int32_t num_new_tokens) {
  for (LayerKindBlocks& kind : kinds_) kind.grow(seq_id, seq.num_slots, num_new_tokens);
  seq.num_slots += num_new_tokens;
  counts_.num_logical_slots += num_new_tokens;
}

void KvCacheManager::release_unreachable(uint64_t seq_id, int32_t num_computed_tokens) {
  const SequenceState& seq = at(seq_id);
  PG_CHECK(num_computed_tokens <= seq.num_slots, "sequence {}: {} computed tokens, {} slots", seq_id,
           num_computed_tokens, seq.num_slots);
  for (LayerKindBlocks& kind : kinds_) kind.release_unreachable(seq_id, num_computed_tokens);  // none in kind 0
}

void KvCacheManager::commit_full_blocks(uint64_t seq_id, std::span<const TokenId> tokens, int32_t num_computed_tokens) {
  if (!enable_prefix_caching_) return;
  SequenceState& seq = at(seq_id);
  PG_CHECK(num_computed_tokens <= seq.num_slots && num_computed_tokens <= std::ssize(tokens),
           "sequence {}: {} computed tokens, {} slots, {} tokens", seq_id, num_computed_tokens, seq.num_slots,
           tokens.size());
  BlockKeyChain& chain = seq.chain;
  const int32_t num_full_blocks = num_computed_tokens / block_size_;
  for (int32_t i = chain.num_committed_blocks; i < num_full_blocks; ++i) {
    const uint64_t parent_key = chain.parent_key(static_cast<std::size_t>(i));
    const auto block_tokens = tokens.subspan(static_cast<std::size_t>(i) * block_size_, block_size_);
    const uint64_t key = key_function_(parent_key, block_tokens);
    if (i < std::ssize(chain.keys)) {
      PG_CHECK(chain.keys[i] == key, "sequence {}: block {} tokens changed after admission", seq_id, i);
      in_flight_.remove(chain, static_cast<std::size_t>(i));
    } else {
      chain.keys.push_back(key);
      chain.first_tokens.push_back(block_tokens.front());
    }
    for (LayerKindBlocks& kind : kinds_) kind.cache_block(seq_id, i, key, parent_key, block_tokens);
    chain.num_committed_blocks = i + 1;
  }
}

void KvCacheManager::fork(uint64_t parent_id, uint64_t child_id) {
  PG_CHECK(!sequences_.contains(child_id), "fork into sequence {} that already has blocks", child_id);
  SequenceState child = at(parent_id);
  for (LayerKindBlocks& kind : kinds_) kind.fork(parent_id, child_id);
  counts_.num_logical_slots += child.num_slots;
  in_flight_.add(child.chain);
  sequences_.emplace(child_id, std::move(child));
}

void KvCacheManager::free(uint64_t seq_id) {
  const SequenceState& seq = at(seq_id);
  for (LayerKindBlocks& kind : kinds_) kind.free(seq_id);
  counts_.num_logical_slots -= seq.num_slots;
  in_flight_.remove(seq.chain);
  sequences_.erase(seq_id);
}

// --- inspection ---

std::span<const BlockId> KvCacheManager::block_table(uint64_t seq_id, KvKindId kind) const {
  at(seq_id);
  return kind_at(kind).table(seq_id);
}

int32_t KvCacheManager::num_released_blocks(uint64_t seq_id, KvKindId kind) const {
  at(seq_id);
  return kind_at(kind).num_released(seq_id);
}

int32_t KvCacheManager::num_slots(uint64_t seq_id) const { return at(seq_id).num_slots; }

int32_t KvCacheManager::filled_slots(BlockId block, KvKindId kind) const { return kind_at(kind).filled_slots(block); }

std::vector<uint64_t> KvCacheManager::sequence_ids() const {
  std::vector<uint64_t> ids;
  ids.reserve(sequences_.size());
  for (const auto& [id, seq] : sequences_) ids.push_back(id);
  std::ranges::sort(ids);
  return ids;
}

}  // namespace pagedgen
