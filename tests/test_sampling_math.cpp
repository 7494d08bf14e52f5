// sampling_math.h, the arithmetic the CPU and device samplers share: portable_exp against
// std::exp over a dense sweep of its domain (a few ulp, monotone, e^0 = 1 exactly), the
// weights (the best weighs exactly 2^44 at any temperature), the sort key's order and
// bounds, and the top-p, min-p and draw positions worked by hand.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include "sample/sampling_math.h"

using namespace pagedgen;
using namespace pagedgen::sampling;

namespace {

constexpr double k2To44 = 17592186044416.0;

// Distance in units in the last place between two positive doubles.
int64_t ulps_apart(double a, double b) {
  const auto ia = std::bit_cast<int64_t>(a);
  const auto ib = std::bit_cast<int64_t>(b);
  return ia > ib ? ia - ib : ib - ia;
}

}  // namespace

TEST_CASE("portable_exp is within 1 ulp of std::exp over [-31, 0] and never decreases") {
  CHECK(portable_exp(0.0) == 1.0);
  CHECK(portable_exp(-0.0) == 1.0);
  // A dense sweep (steps of ~1.5e-5), plus each side of every reduction boundary
  // (x = (k + 1/2) ln 2, where the nearest k changes), where monotonicity is most at risk.
  constexpr int kSteps = 2'000'000;
  int64_t worst_ulps = 0;
  double previous_x = kZeroWeightExponent;
  double previous = portable_exp(kZeroWeightExponent);
  for (int i = 1; i <= kSteps; ++i) {
    const double x = kZeroWeightExponent * (1.0 - static_cast<double>(i) / kSteps);
    const double e = portable_exp(x);
    worst_ulps = std::max(worst_ulps, ulps_apart(e, std::exp(x)));
    if (e < previous) FAIL_CHECK("exp(" << x << ") = " << e << " < exp(" << previous_x << ") = " << previous);
    previous_x = x;
    previous = e;
  }
  for (int k = -45; k < 0; ++k) {
    const double boundary = (k + 0.5) * std::log(2.0);
    double x = boundary;
    for (int j = 0; j < 64; ++j) x = std::nextafter(x, -INFINITY);
    double before = portable_exp(x);
    for (int j = 0; j < 128; ++j) {
      x = std::nextafter(x, INFINITY);
      const double e = portable_exp(x);
      worst_ulps = std::max(worst_ulps, ulps_apart(e, std::exp(x)));
      if (e < before) FAIL_CHECK("exp decreases at x = " << x << " near (k + 1/2) ln 2, k = " << k);
      before = e;
    }
  }
  MESSAGE("largest distance from std::exp: " << worst_ulps << " ulp");
  CHECK(worst_ulps <= 1);
}

TEST_CASE("weights: the best token weighs exactly 2^44 at any temperature, -inf and far tokens 0") {
  for (double temperature : {1e-310, 1e-6, 0.7, 1.0, 2.0, 1e300}) {
    CAPTURE(temperature);
    const double inverse = inverse_temperature(temperature);
    for (float best : {-1e30f, -3.5f, 0.0f, 17.25f, 3e38f}) CHECK(weight(best, best, inverse) == uint64_t{1} << 44);
    CHECK(weight(-INFINITY, 0.0f, inverse) == 0);
  }
  CHECK(std::isinf(inverse_temperature(1e-310)));
  // (logit - max) / T below -31 weighs 0; just above -30.498 (= -44 ln 2) still weighs >= 1.
  CHECK(weight(-31.5f, 0.0f, 1.0) == 0);
  CHECK(weight(-30.4f, 0.0f, 1.0) >= 1);
  CHECK(weight(-3.0f, 0.0f, 1e308) == 0);  // a tiny temperature: only the best remains
  // floor(2^44 e^x), within one unit of std::exp's.
  for (float logit : {-0.6931472f, -1.0f, -12.5f, -30.0f}) {
    CAPTURE(logit);
    CHECK(std::abs(static_cast<double>(weight(logit, 0.0f, 1.0)) - std::exp(static_cast<double>(logit)) * k2To44) <=
          1.0);
  }
  // Temperature 2 takes the square root of the relative probability.
  const double root = static_cast<double>(weight(-2.0f, 0.0f, inverse_temperature(2.0))) / k2To44;
  CHECK(root == doctest::Approx(std::exp(-1.0)).epsilon(1e-12));
}

TEST_CASE("sort keys order by weight, then lower id first, and fit in 64 bits") {
  CHECK(sort_key(5, 3) > sort_key(5, 4));
  CHECK(sort_key(6, static_cast<int32_t>(kMaxVocabSize - 1)) > sort_key(5, 0));
  CHECK(sort_key(1, static_cast<int32_t>(kMaxVocabSize - 1)) == uint64_t{1} << kIdBits);
  const uint64_t top = sort_key(uint64_t{1} << 44, 0);
  CHECK(top == (uint64_t{1} << 63) + (uint64_t{1} << kIdBits) - 1);
  CHECK(key_weight(top) == uint64_t{1} << 44);
  CHECK(key_id(top) == 0);
  for (int32_t id : {0, 1, 128255, static_cast<int32_t>(kMaxVocabSize - 1)}) {
    CHECK(key_id(sort_key(77, id)) == id);
    CHECK(key_weight(sort_key(77, id)) == 77);
  }
  // The heaviest possible vocabulary sums to at most 2^63.
  CHECK(static_cast<double>(kMaxVocabSize) * k2To44 <= std::ldexp(1.0, 63));
}

TEST_CASE("top-p, min-p and draw positions worked by hand") {
  // 128 tokens of 2^44: Z = 2^51. p = 0.5 needs 2^50 (last position 2^50 - 1); p just
  // above 0.5 needs 2^50 + 1; p = 1 keeps everything; a tiny p keeps the first position.
  const uint64_t z = uint64_t{1} << 51;
  CHECK(top_p_last_position(0.5, z) == (uint64_t{1} << 50) - 1);
  CHECK(top_p_last_position(0.5 + 0x1.0p-52, z) == uint64_t{1} << 50);
  CHECK(top_p_last_position(1.0, z) == z - 1);
  CHECK(top_p_last_position(1e-300, z) == 0);
  CHECK(top_p_last_position(0.7, 3) == 2);  // ceil(2.1) = 3
  CHECK(top_p_last_position(0.999999, 1) == 0);

  CHECK(min_p_weight(0.0) == 0);
  CHECK(min_p_weight(1.0) == uint64_t{1} << 44);
  CHECK(min_p_weight(0.5) == uint64_t{1} << 43);
  CHECK(min_p_weight(0.35) == static_cast<uint64_t>(std::ceil(0.35 * k2To44)));

  // u = top 53 bits; target = floor(u * Z / 2^53).
  CHECK(draw_target(0, z) == 0);
  CHECK(draw_target(~uint64_t{0}, z) == z - 1);
  CHECK(draw_target(uint64_t{1} << 63, 1000) == 500);  // u = 1/2
  const uint64_t big = (uint64_t{1} << 63) - 1;
  CHECK(draw_target(~uint64_t{0}, big) == big - 1024);                    // floor((1 - 2^-53)(2^63 - 1)) < the total
  CHECK(draw_target(uint64_t{3} << 62, big) == (uint64_t{3} << 61) - 1);  // u = 3/4: floor(0.75 * (2^63 - 1))
}

TEST_CASE("a NaN or +inf breaks a row; -inf and finite logits do not") {
  CHECK(breaks_row(std::numeric_limits<float>::quiet_NaN()));
  CHECK(breaks_row(INFINITY));
  CHECK_FALSE(breaks_row(-INFINITY));
  CHECK_FALSE(breaks_row(std::numeric_limits<float>::max()));
  CHECK_FALSE(breaks_row(0.0f));
}
