// The sampler's arithmetic, defined once for its two implementations: the CPU Sampler
// (sampler.cpp) and the device sampler (gpu/sampling_kernels.cu) both call these functions,
// so from the same logits and random bits they pick the same token (sampler.h has the
// procedure). Everything is exact integer arithmetic or correctly rounded IEEE double
// +, -, *, / in one fixed order, so it gives the same bits on every host and device:
//   - exp is our own (portable_exp), not std::exp or CUDA's exp, which may differ from
//     each other in the last bit;
//   - on the device the operations are the _rn intrinsics, which nvcc never fuses;
//   - on the host the compiler must not contract a * b + c into one fused multiply-add
//     (GCC does by default in C++ when the target has FMA), so core/CMakeLists.txt compiles
//     sample/sampler.cpp with -ffp-contract=off. The functions have internal linkage: each
//     file gets its own copy, and none compiled elsewhere with other flags replaces that one.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "util/host_device.h"

namespace pagedgen::sampling {

// Fixed-point scale of the weights: the most likely token weighs exactly 2^44.
inline constexpr int kWeightBits = 44;
// A token's sort key holds its weight above kIdBits bits of its id (sort_key), so the
// vocabulary has at most 2^19 tokens; then the sum of all weights is at most 2^63.
inline constexpr int kIdBits = 19;
inline constexpr int64_t kMaxVocabSize = int64_t{1} << kIdBits;
// e^x * 2^44 < 1 for every x below -44 ln 2 = -30.498: such tokens weigh 0 without an exp.
inline constexpr double kZeroWeightExponent = -31.0;
// The least exponent portable_exp takes (2^k stays a normal double); e^x below it is < 1e-307.
inline constexpr double kMinExpExponent = -708.0;
// Log-softmax sums e^(logit - max) over a row in chunks of this many ids, each summed in
// id order, then the chunk sums in order: one fixed order that a device can split over
// threads (one chunk each) and still give the same bits.
inline constexpr int kLogSumChunk = 1024;

// The penalties of one row (SamplingParams' fields), for penalized_logit below. A plain
// struct outside the internal-linkage functions, so that host and device structs hold it.
struct Penalties {
  double presence = 0.0;
  double frequency = 0.0;
  double repetition = 1.0;
};

namespace {

PG_HOST_DEVICE inline double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

PG_HOST_DEVICE inline double sub_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

PG_HOST_DEVICE inline double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

PG_HOST_DEVICE inline double div_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

PG_HOST_DEVICE inline double to_double(uint64_t value) {
#if defined(__CUDA_ARCH__)
  return __ull2double_rn(value);
#else
  return static_cast<double>(value);  // round to nearest, like __ull2double_rn
#endif
}

// 2^k for a normal double (-1022 <= k <= 1023), built from its bits: scaling by it is exact.
PG_HOST_DEVICE inline double pow2(int k) {
  const uint64_t bits = static_cast<uint64_t>(1023 + k) << 52;
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(bits));
#else
  return std::bit_cast<double>(bits);
#endif
}

// e^x for x in [kMinExpExponent, 0], within 1 ulp of the true value: fdlibm's
// __ieee754_exp (Cody-Waite reduction with ln 2 split in two, then a rational
// approximation whose polynomial in r^2 is evaluated by Horner), without its range checks.
//
//   k = nearest integer to x / ln2   hi = x - k * ln2_hi (exact: ln2_hi has 32 bits, |k| <= 45)
//   lo = k * ln2_lo                  r = hi - lo, |r| <= ln2 / 2
//   c = r - r^2 (P1 + r^2 (P2 + r^2 (P3 + r^2 (P4 + r^2 P5))))
//   e^x = 2^k * (1 - ((lo - r c / (2 - c)) - hi))
PG_HOST_DEVICE inline double portable_exp(double x) {
  constexpr double kInvLn2 = 0x1.71547652b82fep+0;  // 1.44269504088896338700
  constexpr double kLn2Hi = 0x1.62e42feep-1;        // 6.93147180369123816490e-01
  constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;  // 1.90821492927058770002e-10
  constexpr double kP1 = 0x1.555555555553ep-3;      // 1.66666666666666019037e-01
  constexpr double kP2 = -0x1.6c16c16bebd93p-9;     // -2.77777777770155933842e-03
  constexpr double kP3 = 0x1.1566aaf25de2cp-14;     // 6.61375632143793436117e-05
  constexpr double kP4 = -0x1.bbd41c5d26bf1p-20;    // -1.65339022054652515390e-06
  constexpr double kP5 = 0x1.6376972bea4d0p-25;     // 4.13813679705723846039e-08
  const double k = rint(mul_rn(x, kInvLn2));        // ties to even; exact
  const double hi = sub_rn(x, mul_rn(k, kLn2Hi));
  const double lo = mul_rn(k, kLn2Lo);
  const double r = sub_rn(hi, lo);
  const double t = mul_rn(r, r);
  double p = kP5;
  p = add_rn(kP4, mul_rn(t, p));
  p = add_rn(kP3, mul_rn(t, p));
  p = add_rn(kP2, mul_rn(t, p));
  p = add_rn(kP1, mul_rn(t, p));
  const double c = sub_rn(r, mul_rn(t, p));
  const double y = sub_rn(1.0, sub_rn(sub_rn(lo, div_rn(mul_rn(r, c), sub_rn(2.0, c))), hi));
  return mul_rn(y, pow2(static_cast<int>(k)));
}

// Step 0, penalties and biases, for one token (SamplingParams has the fields): its logit
// with `bias` (its logit_bias, 0 without one) added, then repetition_penalty when the token
// is in the prompt or among the generated tokens (`in_sequence`), then frequency_penalty
// times `num_times_generated` and presence_penalty when that is > 0 subtracted, each in
// double in this order, and the result rounded to float once. Tokens with no bias that do
// not occur in the sequence keep their logit. -inf stays -inf; a finite logit stays finite
// (the ranges SamplingParams allows). Rounding to float is correctly rounded on both sides.
//
//   x = logit + bias
//   x = in_sequence ? (x > 0 ? x / repetition : x * repetition) : x
//   x = x - frequency * num_times_generated - (num_times_generated > 0 ? presence : 0)
PG_HOST_DEVICE inline float penalized_logit(float logit, double bias, bool in_sequence, int32_t num_times_generated,
                                            const Penalties& penalties) {
  double x = add_rn(static_cast<double>(logit), bias);
  if (in_sequence) x = x > 0.0 ? div_rn(x, penalties.repetition) : mul_rn(x, penalties.repetition);
  if (num_times_generated > 0) {
    x = sub_rn(x, mul_rn(penalties.frequency, static_cast<double>(num_times_generated)));
    x = sub_rn(x, penalties.presence);
  }
#if defined(__CUDA_ARCH__)
  return __double2float_rn(x);
#else
  return static_cast<float>(x);  // round to nearest, like __double2float_rn
#endif
}

// Log probabilities (token_logprobs.h): a token's term e^(logit - max_logit) of the row's
// softmax sum, 0 below kMinExpExponent (and for -inf).
PG_HOST_DEVICE inline double softmax_term(float logit, float max_logit) {
  const double x = sub_rn(static_cast<double>(logit), static_cast<double>(max_logit));
  return x >= kMinExpExponent ? portable_exp(x) : 0.0;
}

// ln of a softmax sum (>= 1): the platform's log (std::log, CUDA's log), which agree within
// one ulp of a double, far below the float the result is rounded to.
PG_HOST_DEVICE inline double log_of_sum(double sum) { return log(sum); }

// log-softmax of one token: (logit - max_logit) - ln(sum), rounded to float once.
PG_HOST_DEVICE inline float log_softmax(float logit, float max_logit, double log_sum) {
  const double value = sub_rn(sub_rn(static_cast<double>(logit), static_cast<double>(max_logit)), log_sum);
#if defined(__CUDA_ARCH__)
  return __double2float_rn(value);
#else
  return static_cast<float>(value);
#endif
}

// Whether a logit makes its whole row unusable: NaN or +inf (the model failed on it).
PG_HOST_DEVICE inline bool breaks_row(float logit) { return !(logit < INFINITY); }

// 1 / temperature; +inf for a denormal temperature, which weight() handles.
PG_HOST_DEVICE inline double inverse_temperature(double temperature) { return div_rn(1.0, temperature); }

// The exponent of a token's weight: (logit - max_logit) * inverse_temperature, where
// max_logit is the best unmasked logit; 0 for the best (0 * inf must stay 0: the best
// weighs 2^44 at any temperature), -inf for -inf.
PG_HOST_DEVICE inline double weight_exponent(float logit, float max_logit, double inverse_temperature) {
  const double difference = sub_rn(static_cast<double>(logit), static_cast<double>(max_logit));
  return difference == 0.0 ? 0.0 : mul_rn(difference, inverse_temperature);
}

// q = floor(2^44 * e^exponent) for an exponent <= 0; 0 below kZeroWeightExponent (tokens
// under ~5.7e-14 of the best), which are never picked.
PG_HOST_DEVICE inline uint64_t weight_of_exponent(double exponent) {
  if (!(exponent >= kZeroWeightExponent)) return 0;
  return static_cast<uint64_t>(mul_rn(portable_exp(exponent), pow2(kWeightBits)));  // floor: >= 0
}

// The weight of an unmasked token (logit <= max_logit, the best unmasked logit).
PG_HOST_DEVICE inline uint64_t weight(float logit, float max_logit, double inverse_temperature) {
  return weight_of_exponent(weight_exponent(logit, max_logit, inverse_temperature));
}

// The order of the candidates as one unique integer: sort_key(a) > sort_key(b) exactly
// when a comes first (higher weight, then lower id). Every token of weight > 0 has a key
// >= 2^kIdBits; id < kMaxVocabSize.
//
//   bit 63 ........... 19 | 18 ............ 0
//   weight (<= 2^44)      | 2^19 - 1 - id
PG_HOST_DEVICE constexpr uint64_t sort_key(uint64_t weight, int32_t id) {
  return weight << kIdBits | static_cast<uint64_t>(kMaxVocabSize - 1 - id);
}
PG_HOST_DEVICE constexpr uint64_t key_weight(uint64_t key) { return key >> kIdBits; }
PG_HOST_DEVICE constexpr int32_t key_id(uint64_t key) {
  return static_cast<int32_t>(kMaxVocabSize - 1 - static_cast<int64_t>(key & (kMaxVocabSize - 1)));
}

// Top-p over candidates of total weight `total` (> 0) keeps the shortest prefix whose sum
// is >= need = ceil(top_p * total) (in double, clamped to [1, total]): the last token kept
// is the one holding mass position need - 1, which this returns.
PG_HOST_DEVICE inline uint64_t top_p_last_position(double top_p, uint64_t total) {
  const auto need = static_cast<uint64_t>(ceil(mul_rn(top_p, to_double(total))));
  return (need < 1 ? 1 : need > total ? total : need) - 1;
}

// The least weight min-p keeps: q >= min_p * 2^44 exactly when q >= ceil(min_p * 2^44).
PG_HOST_DEVICE inline uint64_t min_p_weight(double min_p) {
  return static_cast<uint64_t>(ceil(mul_rn(min_p, pow2(kWeightBits))));
}

// The draw's mass position among kept candidates of total weight `total`:
// floor(u * total / 2^53) with u the top 53 of the 64 random bits (Rng::uniform_double's),
// exact in 128 bits; always < total.
PG_HOST_DEVICE inline uint64_t draw_target(uint64_t random_bits, uint64_t total) {
  const uint64_t u53 = random_bits >> 11;
#if defined(__CUDA_ARCH__)
  return __umul64hi(u53, total) << 11 | (u53 * total) >> 53;
#else
  __extension__ typedef unsigned __int128 Uint128;
  return static_cast<uint64_t>((static_cast<Uint128>(u53) * total) >> 53);
#endif
}

}  // namespace

}  // namespace pagedgen::sampling
