// prefix_block_key: FNV-1a over explicit little-endian bytes plus a splitmix64 finaliser.
#include "kv/prefix_hash.h"

namespace pagedgen {
namespace {

constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

// Feeds `num_bytes` bytes of `value`, least significant first, whatever the host order.
uint64_t fnv1a_le(uint64_t hash, uint64_t value, int num_bytes) {
  for (int i = 0; i < num_bytes; ++i) {
    hash ^= (value >> (8 * i)) & 0xffu;
    hash *= kFnvPrime;
  }
  return hash;
}

uint64_t splitmix64_finalize(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace

uint64_t prefix_block_key(uint64_t parent_key, std::span<const TokenId> tokens) {
  uint64_t hash = fnv1a_le(kFnvOffsetBasis, parent_key, 8);
  hash = fnv1a_le(hash, static_cast<uint32_t>(tokens.size()), 4);
  for (TokenId token : tokens) hash = fnv1a_le(hash, static_cast<uint32_t>(token), 4);
  return splitmix64_finalize(hash);
}

}  // namespace pagedgen
