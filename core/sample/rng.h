// Rng: the per-sample random stream (xoshiro256** seeded through splitmix64), with uniform
// doubles and floats defined bit-exactly, and derive_seed, the fixed hash that gives every
// sample its own seed from (run seed, request key, sample index) and nothing else.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pagedgen {

class Rng {
 public:
  // State = four successive splitmix64 outputs starting from `seed` (never all zero).
  explicit Rng(uint64_t seed);

  uint64_t next_u64();
  // (next_u64() >> 11) * 2^-53: a multiple of 2^-53 in [0, 1), exact in a double.
  double uniform_double();
  // (next_u64() >> 40) * 2^-24: a multiple of 2^-24 in [0, 1), exact in a float.
  float uniform_float();

 private:
  std::array<uint64_t, 4> state_;
};

// Seed of one sample: a fixed 64-bit hash of (run_seed, the request's key bytes, the
// sample index). Only these three inputs matter: never batching, threads or block size.
// Defined byte by byte (little-endian words), so it is the same on every machine.
uint64_t derive_seed(uint64_t run_seed, std::string_view request_key, uint64_t sample_index);

// The rule the engine applies to sample `sample_index` of a request:
//  - the request gave a seed:  derive_seed(request_seed, "", sample_index), so a seeded
//    request gives the same samples in any file and under any --seed;
//  - otherwise:                derive_seed(run_seed, request_key, sample_index), where
//    request_key is Request::seed_key (io/request.h).
uint64_t sample_seed(std::optional<uint64_t> request_seed, uint64_t run_seed, std::string_view request_key,
                     uint64_t sample_index);

}  // namespace pagedgen
