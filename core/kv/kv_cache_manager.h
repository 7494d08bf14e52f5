// KvCacheManager: per-sequence block tables over the BlockPool, prefix matching, slot
// allocation, fork and copy-on-write, and the counted KV memory figures. Sequences are
// plain ids here: the manager owns the tables and never sees a Sequence record.
//
// Logical to physical, block_size 4, a sequence of 10 tokens whose first 8 hit the cache:
//   position   0 1 2 3 | 4 5 6 7 | 8 9 . .
//   table      [  17   |    3    |   5   ]     slot of position p = table[p / 4] * 4 + p % 4
//   fill       4 (shared, cached) 4 (cached)    2 (owned; the next token goes to slot 5*4+2)
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "step/step_batch.h"
#include "kv/block_pool.h"
#include "kv/prefix_hash.h"
#include "step/ids.h"

namespace pagedgen {

// Token slots per block, at most (the settings are checked against it where they are read).
inline constexpr int32_t kMaxBlockSize = 256;

struct KvCacheConfig {
  int32_t num_blocks = 0;
  int32_t block_size = 16;               // 1..kMaxBlockSize token slots per block
  bool enable_prefix_caching = true;     // false: no sharing between requests (fork still shares)
  PrefixKeyFunction key_function = &prefix_block_key;  // a test seam for forced collisions
};

// What a new sequence can start from: cached full blocks, then possibly the first tokens of
// one more cached block (a partial match), whose K/V are copied into a block of its own
// rather than computed. Never the last known token: at least one token is computed, so the
// step yields logits.
//
// block_size 4, cached: [1 2 3 4] and [5 6 7 8] after it; a new prompt 1 2 3 4 5 6 9:
//   full:    [1 2 3 4] shared (one more reference)
//   partial: [5 6 . .] copied from [5 6 7 8] into a new block, then 9 is computed after it
struct PrefixMatch {
  std::vector<BlockId> blocks;        // [num hit blocks] physical ids, logical order
  std::vector<uint64_t> keys;         // [num hit blocks] their chained keys
  std::optional<BlockId> partial_block;  // cached block whose first num_partial_tokens tokens match next
  int32_t num_partial_tokens = 0;     // 0 when there is no partial match
  int32_t num_cached_tokens = 0;      // blocks.size() * block_size + num_partial_tokens
  int32_t num_lookup_blocks = 0;      // full blocks eligible for a hit: (num_tokens - 1) / block_size
  int32_t num_collisions = 0;         // 1 when the probe that ended the match found the key with other tokens
  // The first missing full block is being computed by a running sequence, or, when the
  // cache offers no partial match, a block with the same parent key and first token is:
  // admitting now would compute those tokens twice; waiting lets this sequence share or
  // copy them.
  bool next_block_in_flight = false;
};

// Every figure is counted as it happens, never estimated.
struct KvCacheStats {
  int64_t num_lookup_blocks = 0;   // over admissions: full blocks eligible for a prefix hit
  int64_t num_hit_blocks = 0;      // ... of which served from the prefix cache
  int64_t num_hit_tokens = 0;      // tokens whose prefill was skipped: hit blocks * block_size + partial tokens
  int64_t num_partial_hits = 0;    // partial matches: blocks copied at admission
  int64_t num_partial_tokens = 0;  // ... the tokens they carried
  int64_t num_key_collisions = 0;  // key found with another parent key or other tokens
  int64_t num_cow_copies = 0;      // copy-on-write block copies handed to the backend
  int64_t num_evictions = 0;       // cached blocks at count 0 reused for other content
  int32_t num_used_blocks = 0;     // blocks with count > 0 now
  int32_t peak_used_blocks = 0;
  int64_t num_allocated_slots = 0; // num_used_blocks * block_size
  int64_t num_filled_slots = 0;    // slots holding a token, each physical block once
  int64_t num_logical_slots = 0;   // sum over sequences of their slots (shared blocks counted per sharer)
};

class KvCacheManager {
 public:
  explicit KvCacheManager(const KvCacheConfig& config);

  int32_t block_size() const { return block_size_; }
  int32_t num_blocks() const { return pool_.num_blocks(); }
  int32_t num_free_blocks() const { return pool_.num_free_blocks(); }
  bool prefix_caching_enabled() const { return enable_prefix_caching_; }
  int32_t num_blocks_for_tokens(int64_t num_tokens) const;
  const BlockPool& pool() const { return pool_; }
  KvCacheStats stats() const;

  // --- admission of a new (or preempted, to be recomputed) sequence ---
  // Probes the prefix cache with the sequence's known tokens. Counts nothing: allocate()
  // counts the match it is given, so a sequence that waits can be probed again.
  PrefixMatch match_prefix(std::span<const TokenId> known_tokens) const;
  // Whether the cached prefix plus slots for `num_new_tokens` more tokens fit now.
  bool can_allocate(const PrefixMatch& match, int32_t num_new_tokens) const;
  // Builds the sequence's table: the match's blocks, then new blocks for num_new_tokens
  // slots (the tokens scheduled now, all within known_tokens). A partial match returns the
  // block copy the backend runs before the step; its source block is held until
  // release_copy_sources(), so nothing reuses it before the copy.
  std::optional<BlockCopy> allocate(uint64_t seq_id, std::span<const TokenId> known_tokens, const PrefixMatch& match,
                                    int32_t num_new_tokens);
  // The step's block copies ran: the sources held for partial matches are let go.
  void release_copy_sources();

  // --- later steps ---
  // Whether `num_new_tokens` more slots fit, counting a copy-on-write block if needed.
  bool can_append_slots(uint64_t seq_id, int32_t num_new_tokens) const;
  // Adds slots; a new block only when the last is full. When the last block is partial and
  // shared (after fork) it is first copied to a new block: the copy is returned for the
  // backend and the old block loses one reference.
  std::optional<BlockCopy> append_slots(uint64_t seq_id, int32_t num_new_tokens);
  // Enters the blocks made full by the first num_computed_tokens tokens (their K/V now
  // written) into the prefix cache, so later sequences hit them.
  void commit_full_blocks(uint64_t seq_id, std::span<const TokenId> tokens, int32_t num_computed_tokens);
  // The child's table becomes the parent's; every block gets one more reference.
  void fork(uint64_t parent_id, uint64_t child_id);
  // Releases the blocks tail first, so the sequence's tail blocks are evicted first.
  void free(uint64_t seq_id);

  // --- inspection ---
  bool has_sequence(uint64_t seq_id) const { return sequences_.contains(seq_id); }
  std::span<const BlockId> block_table(uint64_t seq_id) const;
  int32_t num_slots(uint64_t seq_id) const;  // tokens of the sequence that have a slot
  int32_t filled_slots(BlockId block) const;  // slots of the block holding a token
  std::vector<uint64_t> sequence_ids() const;  // ascending

 private:
  struct SequenceBlocks {
    std::vector<BlockId> table;
    int32_t num_slots = 0;
    // Chained keys of the sequence's known full blocks: [0, num_committed_blocks) are in
    // the cache (or were offered to it), the rest are in flight (being computed).
    std::vector<uint64_t> keys;
    std::vector<TokenId> first_tokens;  // [keys.size()] each full block's first token
    int32_t num_committed_blocks = 0;
  };

  const SequenceBlocks& at(uint64_t seq_id) const;
  SequenceBlocks& at(uint64_t seq_id);
  bool needs_copy_on_write(const SequenceBlocks& seq) const;
  void grow(SequenceBlocks& seq, int32_t num_new_tokens);
  void add_in_flight(const SequenceBlocks& seq);
  void remove_in_flight(const SequenceBlocks& seq, std::size_t block_index);
  void remove_in_flight(const SequenceBlocks& seq);

  int32_t block_size_;
  bool enable_prefix_caching_;
  PrefixKeyFunction key_function_;
  BlockPool pool_;
  std::vector<int32_t> fill_;  // [num_blocks] slots holding a token, meaningful while in use
  std::unordered_map<uint64_t, SequenceBlocks> sequences_;
  std::unordered_map<uint64_t, int32_t> in_flight_keys_;  // key -> number of sequences computing it
  std::unordered_map<ChildKey, int32_t, ChildKeyHash> in_flight_children_;  // the same blocks by (parent, first token)
  std::vector<BlockId> copy_sources_;  // partial-match sources held until their copy ran
  KvCacheStats counts_;  // the counters this class keeps; pool figures are added in stats()
};

}  // namespace pagedgen
