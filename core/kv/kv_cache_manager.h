// KvCacheManager: the KV memory's one entry point for the scheduler: prefix matching, slot
// allocation, fork and copy-on-write, window releases and the counted KV memory figures.
// It coordinates one LayerKindBlocks per layer kind (pool, fills, per-sequence tables) and
// the InFlightBlocks (prefix blocks being computed). Sequences are plain ids here: the
// manager never sees a Sequence record.
//
// Layer kinds (step/kv_kinds.h): kind 0 (full attention) and each sliding-window kind have a
// BlockPool of their own, and a sequence has one table per kind over the same logical
// blocks. A window kind gives back the blocks below the first position its next query
// reaches (release_unreachable); they stay in its prefix cache at count 0 when committed.
//
//   window 6, block_size 4, 13 tokens computed: the next query (position 13) reaches 8..13
//   position   0 1 2 3 | 4 5 6 7 | 8 9 10 11 | 12 .
//   kind 0     [  17   |    3    |    5      |  9   ]
//   kind 1     [ (given back)    |    2      |  7   ]   blocks 0 and 1 of kind 1 released
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

#include "kv/block_pool.h"
#include "kv/in_flight_blocks.h"
#include "kv/layer_kind_blocks.h"
#include "kv/prefix_hash.h"
#include "step/ids.h"
#include "step/kv_kinds.h"
#include "step/step_batch.h"

namespace pagedgen {

// Token slots per block, at most (the settings are checked against it where they are read).
inline constexpr int32_t kMaxBlockSize = 256;

// A sliding-window kind's pool: kinds 1, 2, ... of KvCacheConfig.
struct KvWindowPool {
  int32_t window = 0;  // > 0 positions: a query at p reads p - window + 1 .. p
  int32_t num_blocks = 0;
};

struct KvCacheConfig {
  int32_t num_blocks = 0;                              // kind 0's pool (the full-attention layers)
  int32_t block_size = 16;                             // 1..kMaxBlockSize token slots per block
  bool enable_prefix_caching = true;                   // false: no sharing between requests (fork still shares)
  PrefixKeyFunction key_function = &prefix_block_key;  // a test seam for forced collisions
  std::vector<KvWindowPool> window_kinds = {};         // kinds 1, 2, ...; empty for a model without windows
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
  std::vector<BlockId> blocks;           // [num hit blocks] physical ids, logical order
  std::vector<uint64_t> keys;            // [num hit blocks] their chained keys
  std::optional<BlockId> partial_block;  // cached block whose first num_partial_tokens tokens match next
  int32_t num_partial_tokens = 0;        // 0 when there is no partial match
  int32_t num_cached_tokens = 0;         // blocks.size() * block_size + num_partial_tokens
  int32_t num_lookup_blocks = 0;         // full blocks eligible for a hit: (num_tokens - 1) / block_size
  int32_t num_collisions = 0;            // 1 when the probe that ended the match found the key with other tokens
  // The first missing full block is being computed by a running sequence, or, when the
  // cache offers no partial match, a block with the same parent key and first token is:
  // admitting now would compute those tokens twice; waiting lets this sequence share or
  // copy them.
  bool next_block_in_flight = false;
  // Per window kind (kinds 1, 2, ...): the hit blocks its next query reaches, from logical
  // block first_block to the hit point, and its own cached copy of the partial match's source.
  struct WindowHit {
    int32_t first_block = 0;
    std::vector<BlockId> blocks = {};  // [match blocks - first_block] of that kind's pool
    std::optional<BlockId> partial_block;
  };
  std::vector<WindowHit> window_hits;  // [num_kinds - 1]
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
  int64_t num_allocated_slots = 0;  // num_used_blocks * block_size
  int64_t num_filled_slots = 0;     // slots holding a token, each physical block once
  int64_t num_logical_slots = 0;    // sum over sequences of their slots (shared blocks counted per sharer)
  // The figures above (blocks, slots) are kind 0's; these are every kind's, kind 0 first.
  std::vector<KvKindStats> kinds;  // [num_kinds]
};

class KvCacheManager {
 public:
  explicit KvCacheManager(const KvCacheConfig& config);

  int32_t block_size() const { return block_size_; }
  int32_t num_kinds() const { return static_cast<int32_t>(kinds_.size()); }
  int32_t window(KvKindId kind) const { return kind_at(kind).window(); }  // 0 for kind 0
  int32_t num_blocks(KvKindId kind = 0) const { return kind_at(kind).pool().num_blocks(); }
  int32_t num_free_blocks(KvKindId kind = 0) const { return kind_at(kind).pool().num_free_blocks(); }
  bool prefix_caching_enabled() const { return enable_prefix_caching_; }
  int32_t num_blocks_for_tokens(int64_t num_tokens) const;
  // The most blocks of `kind` one sequence of num_tokens tokens (and the next one's slot)
  // holds when it runs alone in chunks of at most max_chunk_tokens: every block for kind
  // 0; for a window kind those its chunk and window reach, at most.
  int32_t num_blocks_alone(KvKindId kind, int64_t num_tokens, int32_t max_chunk_tokens) const;
  const BlockPool& pool(KvKindId kind = 0) const { return kind_at(kind).pool(); }
  KvCacheStats stats() const;

  // --- admission of a new (or preempted, to be recomputed) sequence ---
  // Probes the prefix cache with the sequence's known tokens. Counts nothing: allocate()
  // counts the match it is given, so a sequence that waits can be probed again.
  PrefixMatch match_prefix(std::span<const TokenId> known_tokens) const;
  // The match without its partial block (those tokens computed instead), its window hits
  // fitted again (a window then reaching further back may shorten it).
  PrefixMatch without_partial(const PrefixMatch& match, std::span<const TokenId> known_tokens) const;
  // Whether the cached prefix plus slots for `num_new_tokens` more tokens fit now.
  bool can_allocate(const PrefixMatch& match, int32_t num_new_tokens) const;
  // Builds the sequence's table: the match's blocks, then new blocks for num_new_tokens
  // slots (the tokens scheduled now, all within known_tokens). A partial match returns the
  // block copy the backend runs before the step; its source block is held until
  // release_copy_sources(), so nothing reuses it before the copy.
  // Window kinds copy too: one copy per kind, kind 0's first.
  std::vector<BlockCopy> allocate(uint64_t seq_id, std::span<const TokenId> known_tokens, const PrefixMatch& match,
                                  int32_t num_new_tokens);
  // The step's block copies ran: the sources held for partial matches are let go.
  void release_copy_sources();

  // --- later steps ---
  // Whether `num_new_tokens` more slots fit, counting a copy-on-write block if needed.
  bool can_append_slots(uint64_t seq_id, int32_t num_new_tokens) const;
  // Adds slots; a new block only when the last is full. When the last block is partial and
  // shared (after fork) it is first copied to a new block (in each kind): the copies are
  // returned for the backend and the old blocks lose one reference.
  std::vector<BlockCopy> append_slots(uint64_t seq_id, int32_t num_new_tokens);
  // The sequence's next query is at position num_computed_tokens: each window kind gives
  // back the blocks wholly below the first position it reaches, tail first. Cached ones
  // stay in the prefix cache at count 0. Nothing for kind 0.
  void release_unreachable(uint64_t seq_id, int32_t num_computed_tokens);
  // Enters the blocks made full by the first num_computed_tokens tokens (their K/V now
  // written) into the prefix cache, so later sequences hit them.
  void commit_full_blocks(uint64_t seq_id, std::span<const TokenId> tokens, int32_t num_computed_tokens);
  // The child's table becomes the parent's; every block gets one more reference.
  void fork(uint64_t parent_id, uint64_t child_id);
  // Releases the blocks tail first, so the sequence's tail blocks are evicted first.
  void free(uint64_t seq_id);

  // --- inspection ---
  bool has_sequence(uint64_t seq_id) const { return sequences_.contains(seq_id); }
  // The table of one kind: entries below num_released_blocks are given back (not held;
  // 0 in the table, never read: below every window the sequence's queries reach).
  std::span<const BlockId> block_table(uint64_t seq_id, KvKindId kind = 0) const;
  int32_t num_released_blocks(uint64_t seq_id, KvKindId kind) const;
  int32_t num_slots(uint64_t seq_id) const;                      // tokens of the sequence that have a slot
  int32_t filled_slots(BlockId block, KvKindId kind = 0) const;  // slots of the block holding a token
  std::vector<uint64_t> sequence_ids() const;                    // ascending

 private:
  // What the manager keeps of a sequence besides its tables (which each kind keeps).
  struct SequenceState {
    int32_t num_slots = 0;
    BlockKeyChain chain;  // its full blocks' keys: committed, then in flight
  };

  const LayerKindBlocks& kind_at(KvKindId kind) const;
  const SequenceState& at(uint64_t seq_id) const;
  SequenceState& at(uint64_t seq_id);
  // Kind k's part of the match: kind 0's hits, or window kind k's.
  static HitBlocks hits_of(const PrefixMatch& match, std::size_t k);
  void check_allocation(uint64_t seq_id, std::span<const TokenId> known_tokens, const PrefixMatch& match,
                        int32_t num_new_tokens) const;
  void count_admission(const PrefixMatch& match);
  // Fits the match's window hits, shortening the match until every window kind has the blocks it needs.
  void match_windows(PrefixMatch& match, std::span<const TokenId> known_tokens) const;
  bool find_window_hits(PrefixMatch& match, std::span<const TokenId> known_tokens) const;
  void grow(uint64_t seq_id, SequenceState& seq, int32_t num_new_tokens);

  int32_t block_size_;
  bool enable_prefix_caching_;
  PrefixKeyFunction key_function_;
  std::vector<LayerKindBlocks> kinds_;  // [num_kinds], kind 0 (full attention) first
  std::unordered_map<uint64_t, SequenceState> sequences_;
  InFlightBlocks in_flight_;
  KvCacheStats counts_;  // the counters this class keeps; pool figures are added in stats()
};

}  // namespace pagedgen
