// Prefix-cache keys: a chained 64-bit hash of (parent key, the token ids of one full block),
// identical on every machine and run, so block ids and hit counts are reproducible.
#pragma once

#include <cstdint>
#include <span>

#include "step/ids.h"

namespace pagedgen {

// The parent key of a sequence's first block.
inline constexpr uint64_t kRootPrefixKey = 0x9e3779b97f4a7c15ull;

// Key of a full block whose preceding blocks have key `parent_key`:
//   FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3) over the bytes
//     parent_key (8 bytes, little-endian) | tokens.size() (4 bytes LE) | each token id (4 bytes LE)
//   followed by the splitmix64 finaliser so that nearby inputs spread over all 64 bits.
// Equal keys do not prove equal prefixes: the block pool also compares parent key and tokens.
uint64_t prefix_block_key(uint64_t parent_key, std::span<const TokenId> tokens);

// A key function with prefix_block_key's signature; tests pass their own to force collisions.
using PrefixKeyFunction = uint64_t (*)(uint64_t parent_key, std::span<const TokenId> tokens);

}  // namespace pagedgen
