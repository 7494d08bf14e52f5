#include "sample/rng.h"

namespace pagedgen {

namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;
// Separates derive_seed's input space from plain splitmix64 streams of the run seed.
constexpr uint64_t kDeriveDomain = 0x70616765646765ull;  // "pagedge" in ASCII

// splitmix64's output function (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t splitmix64_next(uint64_t& counter) {
  counter += kGolden;
  return mix64(counter);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t absorb(uint64_t hash, uint64_t word) { return mix64((hash ^ word) + kGolden); }

}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t counter = seed;
  for (uint64_t& word : state_) word = splitmix64_next(counter);
}

// xoshiro256** 1.0 (Blackman and Vigna).
uint64_t Rng::next_u64() {
  const uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

double Rng::uniform_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

float Rng::uniform_float() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }

// Words absorbed, in order: the key's length, its bytes as little-endian 8-byte words
// (the last one zero-padded), the sample index. The length word keeps "ab" and "ab\0"
// apart.
uint64_t derive_seed(uint64_t run_seed, std::string_view request_key, uint64_t sample_index) {
  uint64_t hash = mix64(run_seed ^ kDeriveDomain);
  hash = absorb(hash, request_key.size());
  for (std::size_t start = 0; start < request_key.size(); start += 8) {
    uint64_t word = 0;
    for (std::size_t i = 0; i < 8 && start + i < request_key.size(); ++i)
      word |= static_cast<uint64_t>(static_cast<unsigned char>(request_key[start + i])) << (8 * i);
    hash = absorb(hash, word);
  }
  return absorb(hash, sample_index);
}

uint64_t sample_seed(std::optional<uint64_t> request_seed, uint64_t run_seed, std::string_view request_key,
                     uint64_t sample_index) {
  if (request_seed) return derive_seed(*request_seed, "", sample_index);
  return derive_seed(run_seed, request_key, sample_index);
}

}  // namespace pagedgen
