// BlockPool: reference counts, the intrusive LRU free queue and the prefix-cache map.
#include "kv/block_pool.h"

#include <algorithm>

#include "util/error.h"

namespace pagedgen {

BlockPool::BlockPool(int32_t num_blocks) {
  if (num_blocks < 1) fail_setting("num_blocks", "{} leaves the KV pool empty: it needs at least 1 block", num_blocks);
  blocks_.resize(static_cast<std::size_t>(num_blocks));
  prev_.resize(static_cast<std::size_t>(num_blocks) + 1);
  next_.resize(static_cast<std::size_t>(num_blocks) + 1);
  const int32_t sentinel = num_blocks;
  prev_[sentinel] = next_[sentinel] = sentinel;
  for (BlockId block = 0; block < num_blocks; ++block) push_tail(block);
}

const BlockPool::Block& BlockPool::at(BlockId block) const {
  PG_CHECK(block >= 0 && block < num_blocks(), "block id {} outside the pool of {}", block, num_blocks());
  return blocks_[static_cast<std::size_t>(block)];
}

BlockPool::Block& BlockPool::at(BlockId block) {
  return const_cast<Block&>(static_cast<const BlockPool&>(*this).at(block));
}

void BlockPool::unlink(BlockId block) {
  next_[prev_[block]] = next_[block];
  prev_[next_[block]] = prev_[block];
}

void BlockPool::push_tail(BlockId block) {
  const int32_t sentinel = num_blocks();
  const int32_t tail = prev_[sentinel];
  next_[tail] = block;
  prev_[block] = tail;
  next_[block] = sentinel;
  prev_[sentinel] = block;
}

std::size_t ChildKeyHash::operator()(const ChildKey& k) const {
  return std::hash<uint64_t>{}(k.parent_key ^
                               (static_cast<uint64_t>(static_cast<uint32_t>(k.first_token)) * 0x9E3779B97F4A7C15ULL));
}

void BlockPool::evict(BlockId block) {
  Block& b = at(block);
  cache_.erase(*b.cache_key);
  const auto siblings = children_.find({b.parent_key, b.tokens.front()});
  PG_CHECK(siblings != children_.end(), "cached block {} missing from the partial-match index", block);
  std::erase(siblings->second, block);
  if (siblings->second.empty()) children_.erase(siblings);
  b.cache_key.reset();
  b.tokens.clear();
  ++num_evictions_;
}

uint64_t BlockPool::cache_key(BlockId block) const {
  const Block& b = at(block);
  PG_CHECK(b.cache_key.has_value(), "block {} is not cached", block);
  return *b.cache_key;
}

std::vector<BlockId> BlockPool::free_queue() const {
  std::vector<BlockId> order;
  const int32_t sentinel = num_blocks();
  for (int32_t block = next_[sentinel]; block != sentinel; block = next_[block]) order.push_back(block);
  return order;
}

std::optional<BlockId> BlockPool::allocate() {
  const int32_t sentinel = num_blocks();
  const BlockId block = next_[sentinel];
  if (block == sentinel) return std::nullopt;
  unlink(block);
  Block& b = at(block);
  PG_CHECK(b.ref_count == 0, "block {} in the free queue has count {}", block, b.ref_count);
  if (b.cache_key) evict(block);
  b.ref_count = 1;
  peak_used_blocks_ = std::max(peak_used_blocks_, ++num_used_blocks_);
  return block;
}

void BlockPool::add_ref(BlockId block) {
  Block& b = at(block);
  if (b.ref_count == 0) {
    unlink(block);
    peak_used_blocks_ = std::max(peak_used_blocks_, ++num_used_blocks_);
  }
  if (++b.ref_count == 2) ++num_shared_blocks_;
}

void BlockPool::release(BlockId block) {
  Block& b = at(block);
  PG_CHECK(b.ref_count > 0, "release of free block {}", block);
  if (b.ref_count == 2) --num_shared_blocks_;
  if (--b.ref_count == 0) {
    push_tail(block);
    --num_used_blocks_;
  }
}

CacheLookup BlockPool::lookup(uint64_t key, uint64_t parent_key, std::span<const TokenId> tokens) const {
  const auto it = cache_.find(key);
  if (it == cache_.end()) return {};
  const Block& b = at(it->second);
  if (b.parent_key != parent_key || !std::ranges::equal(b.tokens, tokens))
    return {.block = std::nullopt, .collision = true};
  return {.block = it->second, .collision = false};
}

std::optional<PartialLookup> BlockPool::longest_partial(uint64_t parent_key, std::span<const TokenId> tokens) const {
  if (tokens.empty()) return std::nullopt;
  const auto siblings = children_.find({parent_key, tokens.front()});
  if (siblings == children_.end()) return std::nullopt;
  std::optional<PartialLookup> best;
  for (BlockId block : siblings->second) {
    const std::vector<TokenId>& cached = at(block).tokens;
    const auto [mismatch, unused] = std::ranges::mismatch(cached, tokens);
    const auto num_tokens = static_cast<int32_t>(mismatch - cached.begin());
    if (!best || num_tokens > best->num_tokens) best = PartialLookup{block, num_tokens};
  }
  return best;
}

bool BlockPool::cache_block(BlockId block, uint64_t key, uint64_t parent_key, std::span<const TokenId> tokens) {
  Block& b = at(block);
  PG_CHECK(b.ref_count > 0, "caching block {} that nobody holds", block);
  PG_CHECK(!tokens.empty(), "caching block {} without tokens", block);
  if (b.cache_key || cache_.contains(key)) return false;
  cache_.emplace(key, block);
  children_[{parent_key, tokens.front()}].push_back(block);
  b.cache_key = key;
  b.parent_key = parent_key;
  b.tokens.assign(tokens.begin(), tokens.end());
  return true;
}

}  // namespace pagedgen
