// 64-bit FNV-1a over explicit little-endian bytes, and the splitmix64 finaliser that
// spreads its result over all 64 bits. One definition for every fixed hash pagedgen
// writes or compares: prefix-cache keys (kv/prefix_hash) and file fingerprints (io/manifest).
#pragma once

#include <cstdint>
#include <string_view>

namespace pagedgen {

inline constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;
inline constexpr uint64_t kFnvPrime = 0x100000001b3ull;

// Feeds `num_bytes` bytes of `value`, least significant first, whatever the host order.
inline uint64_t fnv1a_le(uint64_t hash, uint64_t value, int num_bytes) {
  for (int i = 0; i < num_bytes; ++i) {
    hash ^= (value >> (8 * i)) & 0xffu;
    hash *= kFnvPrime;
  }
  return hash;
}

// Feeds every byte of `bytes` in order.
inline uint64_t fnv1a_bytes(uint64_t hash, std::string_view bytes) {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kFnvPrime;
  }
  return hash;
}

inline uint64_t splitmix64_finalize(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace pagedgen
