// LayerKindBlocks: the KV blocks of one layer kind (step/kv_kinds.h): its BlockPool, the
// fill of each block, and every sequence's table in that pool, with grow, fork,
// copy-on-write, free and, for a sliding-window kind, the release of blocks no query
// reaches any more. KvCacheManager keeps one per kind and decides when each of these runs.
//
// A sequence's table in one kind, block_size 4, window 6, 13 tokens computed: the next
// query (position 13) reaches 8..13, so entries 0 and 1 are given back (num_released 2).
//   position   0 1 2 3 | 4 5 6 7 | 8 9 10 11 | 12 .
//   table      [  0    |    0    |    2      |  7   ]   fill of block 7: 1 (the next slot is 7*4+1)
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_pool.h"
#include "step/ids.h"
#include "step/kv_kinds.h"
#include "step/step_batch.h"

namespace pagedgen {

// One kind's memory, counted as it happens.
struct KvKindStats {
  int32_t window = 0;
  int32_t num_blocks = 0;           // the kind's pool
  int32_t num_used_blocks = 0;      // count > 0 now
  int32_t peak_used_blocks = 0;     // at any moment (the pool's count)
  int64_t num_filled_slots = 0;     // slots of used blocks holding a token
  int64_t num_released_blocks = 0;  // window kinds: table entries given back once no query reached them
};

// The blocks a new sequence starts from in one kind: cached hits from logical block
// first_block on (the entries before it never held, below the window), then possibly the
// source of a partial match, copied into a block of its own.
struct HitBlocks {
  int32_t first_block = 0;
  std::span<const BlockId> blocks;  // [match blocks - first_block] physical ids in this kind's pool
  std::optional<BlockId> partial_source;
};

class LayerKindBlocks {
 public:
  LayerKindBlocks(KvKindId kind, int32_t window, int32_t num_blocks, int32_t block_size);

  int32_t window() const { return window_; }  // 0: full attention (kind 0)
  const BlockPool& pool() const { return pool_; }
  int64_t num_filled_slots() const { return num_filled_slots_; }  // over used blocks
  KvKindStats stats() const;
  int32_t filled_slots(BlockId block) const;  // 0 unless in use
  // The first logical block a query at `position` reaches (0 for full attention).
  int32_t first_reachable_block(int64_t position) const;
  // The most blocks a sequence of num_tokens tokens (and the next one's slot) holds here
  // when it runs alone in chunks of at most max_chunk_tokens.
  int32_t num_blocks_alone(int64_t num_tokens, int32_t max_chunk_tokens) const;

  // --- admission ---
  // Whether num_new_blocks fresh blocks fit next to the hits (those at count 0 sit in the
  // free queue and so use free blocks too, as does a partial source held at count 0).
  bool can_take(const HitBlocks& hits, int64_t num_new_blocks) const;
  // Starts the sequence's table with the hits; a partial source is held until
  // release_copy_sources() and copied into a new block holding num_partial_tokens tokens.
  std::optional<BlockCopy> take_hits(uint64_t seq_id, const HitBlocks& hits, int32_t num_partial_tokens);
  void release_copy_sources();

  // --- later steps; num_slots is the sequence's slot count before the call ---
  bool needs_copy_on_write(uint64_t seq_id, int32_t num_slots) const;
  // Moves the sequence off its shared partial last block into a private copy.
  BlockCopy copy_on_write(uint64_t seq_id, int32_t num_slots);
  // Slots num_slots .. num_slots + num_new_tokens - 1: a new block whenever one fills up.
  void grow(uint64_t seq_id, int32_t num_slots, int32_t num_new_tokens);
  // Gives back the entries wholly below what a query at num_computed_tokens reaches, oldest first.
  void release_unreachable(uint64_t seq_id, int32_t num_computed_tokens);
  // Enters the sequence's full logical block `block_index` into the prefix cache (unless given back).
  void cache_block(uint64_t seq_id, int32_t block_index, uint64_t key, uint64_t parent_key,
                   std::span<const TokenId> tokens);
  void fork(uint64_t parent_id, uint64_t child_id);
  void free(uint64_t seq_id);  // tail first, so the tail is evicted first

  std::span<const BlockId> table(uint64_t seq_id) const { return at(seq_id).blocks; }
  int32_t num_released(uint64_t seq_id) const { return at(seq_id).num_released; }
  int32_t num_table_blocks(uint64_t seq_id) const { return static_cast<int32_t>(at(seq_id).blocks.size()); }

 private:
  // Logical block i -> physical block; entries [0, num_released) given back (0, never read).
  struct SequenceTable {
    std::vector<BlockId> blocks;
    int32_t num_released = 0;
  };

  const SequenceTable& at(uint64_t seq_id) const;
  SequenceTable& at(uint64_t seq_id);
  void hold(BlockId block);     // one more reference; counts its fill when it was at 0
  void release(BlockId block);  // one less; uncounts its fill at 0
  BlockId take_free_block(int32_t fill);

  KvKindId kind_;
  int32_t window_;
  int32_t block_size_;
  BlockPool pool_;
  std::vector<int32_t> fill_;          // [num_blocks] slots holding a token, meaningful while in use
  int64_t num_filled_slots_ = 0;       // over used blocks
  int64_t num_released_blocks_ = 0;    // table entries given back once no query reached them
  std::vector<BlockId> copy_sources_;  // partial-match sources held until their copy ran
  std::unordered_map<uint64_t, SequenceTable> tables_;
};

}  // namespace pagedgen
