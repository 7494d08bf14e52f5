// InFlightBlocks: the full prefix blocks that running sequences are computing now, by key
// and by (parent key, first token), so that a new sequence sharing one waits for it instead
// of computing the same tokens twice. BlockKeyChain: one sequence's chained block keys.
//
//   a sequence's known full blocks, 2 committed:
//   block        0     1   | 2     3
//   keys         k0    k1  | k2    k3      in flight: k2 (child (k1, first token of block 2)), k3
//                committed   computing
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_pool.h"
#include "kv/prefix_hash.h"
#include "step/ids.h"

namespace pagedgen {

// Chained keys of a sequence's known full blocks: [0, num_committed_blocks) are in the cache
// (or were offered to it), the rest are in flight (being computed).
struct BlockKeyChain {
  std::vector<uint64_t> keys;
  std::vector<TokenId> first_tokens;  // [keys.size()] each full block's first token
  int32_t num_committed_blocks = 0;

  uint64_t parent_key(std::size_t block_index) const {
    return block_index == 0 ? kRootPrefixKey : keys[block_index - 1];
  }
  ChildKey child_key(std::size_t block_index) const { return {parent_key(block_index), first_tokens[block_index]}; }
  // Appends the keys of the full blocks of `tokens` after the known ones.
  void extend(std::span<const TokenId> tokens, int32_t block_size, PrefixKeyFunction key_function);
};

class InFlightBlocks {
 public:
  bool has_key(uint64_t key) const { return keys_.contains(key); }
  bool has_child(const ChildKey& child) const { return children_.contains(child); }

  // The chain's uncommitted blocks are being computed (by one more sequence).
  void add(const BlockKeyChain& chain);
  // Block `block_index` of the chain is computed (or its sequence stopped computing it).
  void remove(const BlockKeyChain& chain, std::size_t block_index);
  // Every uncommitted block of the chain.
  void remove(const BlockKeyChain& chain);

 private:
  std::unordered_map<uint64_t, int32_t> keys_;                    // key -> number of sequences computing it
  std::unordered_map<ChildKey, int32_t, ChildKeyHash> children_;  // the same blocks by (parent, first token)
};

}  // namespace pagedgen
