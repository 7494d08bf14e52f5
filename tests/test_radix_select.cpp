// radix_select.h, the device sampler's cuts and draw, run here by a serial Row (the
// histograms a thread block fills with atomics, filled by one loop): the token it draws
// equals the CPU Sampler's on random and adversarial rows and parameters, and the
// exponent window it uses to skip exps never leaves out a key of its range.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "sample/radix_select.h"
#include "sample/sampler.h"
#include "sampling_rows.h"

using namespace pagedgen;
using namespace pagedgen::sampling;

namespace {

// The Row of radix_select.h over one logits row, one token after another.
class SerialRow {
 public:
  SerialRow(std::span<const float> logits, std::span<const TokenId> masked, float max_logit, double inverse_temperature)
      : logits_(logits), masked_(masked), max_logit_(max_logit), inverse_temperature_(inverse_temperature) {
    fill(top_, 0, kTopShift);
  }

  const DigitHistogram& top_histogram() const { return top_; }
  const DigitHistogram& histogram(uint64_t prefix, int shift) {
    fill(level_, prefix, shift);
    ++num_levels;
    return level_;
  }
  uint64_t mass_at_least(uint64_t least_key) const {
    const ExponentWindow window = ExponentWindow::of_keys(least_key, ~uint64_t{0});
    uint64_t mass = 0;
    for_each_key(window, [&](uint64_t key) {
      if (key >= least_key) mass += key_weight(key);
    });
    return mass;
  }

  int num_levels = 0;  // histograms below the top one

 private:
  template <typename Fn>
  void for_each_key(const ExponentWindow& window, Fn&& fn) const {
    for (std::size_t i = 0; i < logits_.size(); ++i) {
      if (std::binary_search(masked_.begin(), masked_.end(), static_cast<TokenId>(i))) continue;
      const uint64_t key =
          key_in_window(weight_exponent(logits_[i], max_logit_, inverse_temperature_), static_cast<int32_t>(i), window);
      if (key != 0) fn(key);
    }
  }

  void fill(DigitHistogram& histogram, uint64_t prefix, int shift) const {
    histogram = {};
    for_each_key(ExponentWindow::of_keys(prefix, prefix | low_bits(shift + kDigitBits)), [&](uint64_t key) {
      if (!in_level(key, prefix, shift)) return;
      const int digit = digit_of(key, shift);
      ++histogram.count[digit];
      histogram.mass[digit] += key_weight(key);
      histogram.top_key[digit] = std::max(histogram.top_key[digit], key);
    });
  }

  std::span<const float> logits_;
  std::span<const TokenId> masked_;
  float max_logit_;
  double inverse_temperature_;
  DigitHistogram top_;
  DigitHistogram level_;
};

// The device sampler's procedure for one row, serially: nullopt where the Sampler gives none.
std::optional<TokenId> radix_sample(std::span<const float> logits, const SamplingParams& params, int32_t num_generated,
                                    std::span<const TokenId> end_of_generation, uint64_t random_bits,
                                    int* num_levels = nullptr) {
  std::vector<TokenId> masked;
  masked_ids(params, {}, num_generated, end_of_generation, logits.size(), masked);
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (breaks_row(logits[i])) return std::nullopt;
    if (std::binary_search(masked.begin(), masked.end(), static_cast<TokenId>(i)) || logits[i] == -INFINITY) continue;
    if (!best || logits[i] > logits[*best]) best = i;
  }
  if (!best) return std::nullopt;
  if (params.is_greedy()) return static_cast<TokenId>(*best);
  SerialRow row(logits, masked, logits[*best], inverse_temperature(params.temperature));
  const TokenId token = draw_token(row, Cuts{params.top_k, params.top_p, params.min_p, random_bits});
  if (num_levels != nullptr) *num_levels = row.num_levels;
  return token;
}

}  // namespace

TEST_CASE("the radix selection draws the CPU Sampler's token on random rows and parameters") {
  std::mt19937_64 gen(20240611);
  Sampler sampler;
  int num_rows = 0;
  int num_tokens = 0;
  int most_levels = 0;
  int total_levels = 0;
  for (std::size_t vocab : {1u, 3u, 17u, 1000u, 49152u}) {
    for (int trial = 0; trial < (vocab > 10000 ? 90 : 450); ++trial) {
      const std::vector<float> logits =
          test::make_logits_row(vocab, static_cast<test::RowKind>(trial % test::kNumRowKinds), gen);
      const SamplingParams params = test::random_sampling_params(gen);
      const auto num_generated = static_cast<int32_t>(gen() % 6);
      const uint64_t bits = gen();
      CAPTURE(vocab);
      CAPTURE(trial);
      int num_levels = 0;
      const std::optional<TokenId> expected =
          sampler.sample(logits, params, num_generated, test::kEndOfGeneration, bits);
      REQUIRE(radix_sample(logits, params, num_generated, test::kEndOfGeneration, bits, &num_levels) == expected);
      most_levels = std::max(most_levels, num_levels);
      total_levels += num_levels;
      ++num_rows;
      num_tokens += expected.has_value();
    }
  }
  MESSAGE(num_rows << " rows (" << num_tokens << " with a token); histograms below the top one: " << total_levels
                   << " in all, at most " << most_levels << " for a row");
}

TEST_CASE("the radix selection on hand-built rows: ties, one survivor, exact top-p boundary") {
  Sampler sampler;
  // 128 equal logits: every weight 2^44; top-p 0.5 keeps exactly 64 tokens, the draw picks
  // token floor(u * 64) in id order.
  const std::vector<float> equal(128, 0.0f);
  SamplingParams half;
  half.top_p = 0.5;
  for (uint64_t bits : {uint64_t{0}, ~uint64_t{0}, uint64_t{1} << 63, uint64_t{0x123456789abcdef0}}) {
    CHECK(radix_sample(equal, half, 0, {}, bits) == static_cast<TokenId>(((bits >> 11) * 64) >> 53));
    CHECK(radix_sample(equal, half, 0, {}, bits) == sampler.sample(equal, half, 0, {}, bits));
  }
  // Everything masked or -inf but one token.
  std::vector<float> one_left(1000, -INFINITY);
  one_left[5] = 3.0f;  // a stop id, masked
  one_left[640] = -2.0f;
  SamplingParams masking;
  masking.min_tokens = 1;
  masking.stop_token_ids = {5};
  CHECK(radix_sample(one_left, masking, 0, {}, 99) == 640);
  CHECK(radix_sample(one_left, masking, 1, {}, 99) == sampler.sample(one_left, masking, 1, {}, uint64_t{99}));
  // Unusable rows.
  std::vector<float> broken(10, 0.0f);
  broken[9] = NAN;
  CHECK_FALSE(radix_sample(broken, masking, 0, {}, 1).has_value());
  broken[9] = INFINITY;
  CHECK_FALSE(radix_sample(broken, masking, 0, {}, 1).has_value());
  one_left[640] = -INFINITY;
  CHECK_FALSE(radix_sample(one_left, masking, 0, {}, 1).has_value());
}

TEST_CASE("an exponent window never leaves out a token whose weight falls in its range") {
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> exponent(kZeroWeightExponent, 0.0);
  for (int i = 0; i < 20000; ++i) {
    // A window around the weight of a random exponent, then exponents just outside it.
    const double x = exponent(gen);
    const uint64_t weight = weight_of_exponent(x);
    if (weight == 0) continue;
    const int width = static_cast<int>(gen() % 30);
    const uint64_t lowest_key = sort_key(weight, 0) & ~low_bits(width);
    const uint64_t highest_key = lowest_key | low_bits(width);
    const ExponentWindow window = ExponentWindow::of_keys(lowest_key, highest_key);
    REQUIRE(window.may_hold(x));
    for (double step = 1e-15; step < 1.0; step *= 4) {
      for (double z : {x - step, x + step}) {
        const uint64_t q = weight_of_exponent(z);
        if (z <= 0.0 && q >= key_weight(lowest_key) && q <= key_weight(highest_key)) REQUIRE(window.may_hold(z));
      }
    }
  }
  // The top level's window holds every exponent that has a weight.
  const ExponentWindow all = ExponentWindow::of_keys(0, ~uint64_t{0});
  CHECK(all.may_hold(0.0));
  CHECK(all.may_hold(kZeroWeightExponent));
}
