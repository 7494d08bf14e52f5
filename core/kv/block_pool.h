// BlockPool: the physical KV blocks as plain ids 0..N-1 with reference counts, an O(1)
// LRU free queue, and the prefix cache (key -> full block, plus an index of the cached
// blocks by (parent key, first token) for partial matches). Knows nothing of sequences.
//
// Free queue (intrusive doubly linked list over block ids, initially 0,1,2,...):
//   head -> [least recently freed] ... [most recently freed] <- tail
//   allocate() pops the head; a block whose count drops to 0 is appended at the tail and
//   keeps its prefix-cache entry until it is popped for reuse (an eviction); a cache hit on
//   a block at count 0 takes it out of the queue wherever it is.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "step/ids.h"

namespace pagedgen {

// Result of a prefix-cache probe. A key whose stored parent key or tokens differ is a
// miss with `collision` set.
struct CacheLookup {
  std::optional<BlockId> block;
  bool collision = false;
};

// A block's place in the prefix tree as far as a partial match needs it: the key of the
// block before it and its first token.
struct ChildKey {
  uint64_t parent_key;
  TokenId first_token;
  bool operator==(const ChildKey&) const = default;
};
struct ChildKeyHash {
  std::size_t operator()(const ChildKey& k) const;
};

// A cached block whose first `num_tokens` tokens continue a given parent key: their K/V can
// be copied instead of computed.
struct PartialLookup {
  BlockId block = 0;
  int32_t num_tokens = 0;
};

class BlockPool {
 public:
  explicit BlockPool(int32_t num_blocks);

  int32_t num_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  int32_t num_free_blocks() const { return num_blocks() - num_used_blocks_; }  // count 0, cached or not
  int32_t num_used_blocks() const { return num_used_blocks_; }                 // count > 0
  int32_t peak_used_blocks() const { return peak_used_blocks_; }
  int32_t num_shared_blocks() const { return num_shared_blocks_; }  // count > 1
  int64_t num_evictions() const { return num_evictions_; }
  int32_t num_cached_blocks() const { return static_cast<int32_t>(cache_.size()); }
  int32_t ref_count(BlockId block) const { return at(block).ref_count; }
  bool is_cached(BlockId block) const { return at(block).cache_key.has_value(); }
  // The key and tokens a cached block was entered under (to find the same content in another pool).
  uint64_t cache_key(BlockId block) const;
  std::span<const TokenId> cached_tokens(BlockId block) const { return at(block).tokens; }
  // The free queue from head (next to be reused) to tail; O(N), for tests and checks.
  std::vector<BlockId> free_queue() const;

  // Pops the head of the free queue at count 1, evicting its cache entry if it has one.
  // nullopt when every block is in use (normal flow: the scheduler preempts).
  std::optional<BlockId> allocate();
  // One more reference; a block at count 0 (a cache hit) leaves the free queue.
  void add_ref(BlockId block);
  // One reference less; at 0 the block goes to the tail of the free queue, still cached.
  void release(BlockId block);

  // The cached block for `key` if its parent key and tokens are the same.
  CacheLookup lookup(uint64_t key, uint64_t parent_key, std::span<const TokenId> tokens) const;
  // Among the cached blocks whose parent key is `parent_key`, the one sharing the longest
  // common prefix with `tokens` (at least one token; ties go to the block cached first).
  std::optional<PartialLookup> longest_partial(uint64_t parent_key, std::span<const TokenId> tokens) const;
  // Enters a full block in use into the prefix cache. False, changing nothing, when the
  // block is already cached or another block holds the key (the first one stays).
  bool cache_block(BlockId block, uint64_t key, uint64_t parent_key, std::span<const TokenId> tokens);

 private:
  struct Block {
    int32_t ref_count = 0;
    std::optional<uint64_t> cache_key;
    uint64_t parent_key = 0;
    std::vector<TokenId> tokens;  // the block's token ids while cached
  };

  const Block& at(BlockId block) const;
  Block& at(BlockId block);
  void unlink(BlockId block);
  void push_tail(BlockId block);
  void evict(BlockId block);

  std::vector<Block> blocks_;
  // Free-queue links [num_blocks + 1]: a block is linked exactly while its count is 0.
  // Entry num_blocks is the sentinel node: next_[sentinel] is the head, prev_ the tail.
  std::vector<int32_t> prev_;
  std::vector<int32_t> next_;
  std::unordered_map<uint64_t, BlockId> cache_;
  // The cached blocks by (parent key, first token), in the order they were cached.
  std::unordered_map<ChildKey, std::vector<BlockId>, ChildKeyHash> children_;
  int32_t num_used_blocks_ = 0;
  int32_t peak_used_blocks_ = 0;
  int32_t num_shared_blocks_ = 0;
  int64_t num_evictions_ = 0;
};

}  // namespace pagedgen
