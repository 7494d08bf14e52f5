// prefix_block_key: FNV-1a over explicit little-endian bytes plus a splitmix64 finaliser.
#include "kv/prefix_hash.h"

#include "util/fnv_hash.h"

namespace pagedgen {

uint64_t prefix_block_key(uint64_t parent_key, std::span<const TokenId> tokens) {
  uint64_t hash = fnv1a_le(kFnvOffsetBasis, parent_key, 8);
  hash = fnv1a_le(hash, static_cast<uint32_t>(tokens.size()), 4);
  for (TokenId token : tokens) hash = fnv1a_le(hash, static_cast<uint32_t>(token), 4);
  return splitmix64_finalize(hash);
}

}  // namespace pagedgen
