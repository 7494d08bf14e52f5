// The device sampler's cuts and draw (steps 4-7 of sampler.h) as weighted radix selection
// over the sort keys of sampling_math.h: no sort and no per-token storage. Every question
// is "which candidate, in descending key order, holds position t", where positions count
// candidates (top-k) or weight (top-p, the draw), and is answered digit by digit from
// histograms of the counts and weights of the keys that share the digits fixed so far:
//
//   level 0: all candidate keys by bits 63..56 (digit 255 first, the heaviest tokens)
//            skip digits while t >= their count (or weight), t -= it; digit d holds t:
//            if t falls inside its largest key, that key is the answer; else fix d and
//   level 1: the keys whose bits 63..56 are d, by bits 55..48; ... at most 8 levels
//            (at the last one every digit holds one key)
//
// Integer sums do not depend on the order they are formed in, so a thread block filling
// the histograms with atomics gets the same answer as a serial loop. A Row gives them:
// the device's thread block (gpu/sampling_kernels.cu), or a serial loop in
// tests/test_radix_select.cpp, which checks this procedure against the CPU Sampler.
//
//   const DigitHistogram& top_histogram()                every candidate, by bits 63..56
//   const DigitHistogram& histogram(uint64_t prefix, int shift)
//                                  the keys that agree with prefix above bit
//                                  shift + kDigitBits - 1, by bits shift + kDigitBits - 1..shift
//   uint64_t mass_at_least(uint64_t key)               the weight of the keys >= key
//
// On the device every thread of the block runs these functions on the same shared
// histograms, so they all take the same branches and reach the Row's barriers together.
#pragma once

#include <cmath>
#include <cstdint>

#include "sample/sampling_math.h"
#include "util/host_device.h"

namespace pagedgen::sampling {

inline constexpr int kDigitBits = 8;
inline constexpr int kNumDigits = 1 << kDigitBits;
inline constexpr int kTopShift = 64 - kDigitBits;

struct DigitHistogram {
  uint64_t count[kNumDigits];    // candidates per digit
  uint64_t mass[kNumDigits];     // their weight
  uint64_t top_key[kNumDigits];  // the largest key of each digit; 0 when none
};

// The cuts and the draw of one row (sampling_params.h; random_bits as in SamplingRow).
struct Cuts {
  int32_t top_k = 0;   // 0 = off
  double top_p = 1.0;  // 1 = off
  double min_p = 0.0;  // 0 = off
  uint64_t random_bits = 0;
};

namespace {

// The bits below `bits` set (all 64 for bits >= 64).
PG_HOST_DEVICE constexpr uint64_t low_bits(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

// Whether `key` belongs to the histogram level (prefix, shift), and its digit there.
PG_HOST_DEVICE constexpr bool in_level(uint64_t key, uint64_t prefix, int shift) {
  return (key & ~low_bits(shift + kDigitBits)) == prefix;
}
PG_HOST_DEVICE constexpr int digit_of(uint64_t key, int shift) {
  return static_cast<int>((key >> shift) & (kNumDigits - 1));
}

}  // namespace

// The exponents (weight_exponent) whose weight may lie in [key_weight(lowest_key),
// key_weight(highest_key)]: a superset, wider by a margin far above the error of
// portable_exp (< 1 ulp) and of log, so a Row can skip the exp of every token outside it.
struct ExponentWindow {
  double lowest;
  double highest;

  PG_HOST_DEVICE static ExponentWindow of_keys(uint64_t lowest_key, uint64_t highest_key) {
    constexpr double kMargin = 1e-6;
    const double ln_scale = kWeightBits * 0.69314718055994530942;  // ln 2^44
    const uint64_t lowest_weight = key_weight(lowest_key);
    const uint64_t highest_weight = key_weight(highest_key);
    return {lowest_weight == 0 ? -INFINITY : log(static_cast<double>(lowest_weight)) - ln_scale - kMargin,
            log(static_cast<double>(highest_weight) + 1.0) - ln_scale + kMargin};
  }
  PG_HOST_DEVICE bool may_hold(double exponent) const { return exponent >= lowest && exponent <= highest; }
};

namespace {

// A token's sort key for a Row: 0 (not counted) when its exponent is outside the window or
// it weighs 0; masked tokens never get here.
PG_HOST_DEVICE inline uint64_t key_in_window(double exponent, int32_t id, const ExponentWindow& window) {
  if (!window.may_hold(exponent)) return 0;
  const uint64_t weight = weight_of_exponent(exponent);
  return weight == 0 ? 0 : sort_key(weight, id);
}

enum class Measure { count, mass };

struct Selection {
  uint64_t key;          // the candidate holding the position; 0 when it is past every candidate
  uint64_t mass_before;  // the weight of the candidates before it (of all, when key is 0)
};

// The candidate, in descending key order, whose range [measure of those before it, that +
// its own measure) holds `position`; a candidate measures 1 (count) or its weight (mass).
template <typename Row>
PG_HOST_DEVICE Selection select_at(Row& row, Measure measure, uint64_t position) {
  uint64_t prefix = 0;
  uint64_t mass_before = 0;
  const DigitHistogram* histogram = &row.top_histogram();
  for (int shift = kTopShift; shift >= 0; shift -= kDigitBits) {
    int digit = kNumDigits - 1;
    for (; digit >= 0; --digit) {
      const uint64_t amount = measure == Measure::mass ? histogram->mass[digit] : histogram->count[digit];
      if (position < amount) break;
      position -= amount;
      mass_before += histogram->mass[digit];
    }
    if (digit < 0) break;
    const uint64_t first = histogram->top_key[digit];
    if (position < (measure == Measure::mass ? key_weight(first) : 1)) return {first, mass_before};
    prefix |= static_cast<uint64_t>(digit) << shift;
    if (shift > 0) histogram = &row.histogram(prefix, shift - kDigitBits);
  }
  return {0, mass_before};  // past every candidate (never after level 0: keys are unique)
}

// Steps 4-7: the id of the token drawn among the Row's candidates (there is at least one,
// the best unmasked token). Each cut keeps the keys >= least_key, of weight kept_mass.
template <typename Row>
PG_HOST_DEVICE int32_t draw_token(Row& row, const Cuts& cuts) {
  const DigitHistogram& top = row.top_histogram();
  uint64_t num_candidates = 0;
  uint64_t kept_mass = 0;
  for (int digit = 0; digit < kNumDigits; ++digit) {
    num_candidates += top.count[digit];
    kept_mass += top.mass[digit];
  }
  uint64_t least_key = 0;
  // 4: top-k keeps down to the k-th key.
  if (cuts.top_k > 0 && static_cast<uint64_t>(cuts.top_k) < num_candidates) {
    const Selection kth = select_at(row, Measure::count, static_cast<uint64_t>(cuts.top_k) - 1);
    least_key = kth.key;
    kept_mass = kth.mass_before + key_weight(kth.key);
  }
  // 5: top-p: its position lies inside the kept mass, so among the kept keys.
  if (cuts.top_p < 1.0) {
    const Selection last = select_at(row, Measure::mass, top_p_last_position(cuts.top_p, kept_mass));
    least_key = last.key;
    kept_mass = last.mass_before + key_weight(last.key);
  }
  // 6: min-p: q >= min weight exactly when key >= (min weight, highest id).
  if (cuts.min_p > 0.0) {
    const uint64_t min_key = min_p_weight(cuts.min_p) << kIdBits;
    if (min_key > least_key) {
      least_key = min_key;
      kept_mass = row.mass_at_least(min_key);
    }
  }
  // 7: the draw.
  return key_id(select_at(row, Measure::mass, draw_target(cuts.random_bits, kept_mass)).key);
}

}  // namespace

}  // namespace pagedgen::sampling
