// Log probabilities of a logits row (sample/token_logprobs.h): hand-worked values, the
// top-k order (highest logit first, lower id on ties), -inf logits, and a large row
// against a plain double log-softmax (std::exp, std::log, one sum), to 1e-6.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "sample/token_logprobs.h"

using namespace pagedgen;

TEST_CASE("hand-worked: probabilities 1/4 and 3/4, and 1/8 each of eight") {
  // logits [0, ln 3]: softmax 1/4, 3/4 (ln 3 rounded to float moves them by < 1e-7).
  const std::vector<float> two = {0.0f, std::log(3.0f)};
  const TokenLogprobs a = token_logprobs(two, 0, 2);
  CHECK(a.logprob == doctest::Approx(std::log(0.25)).epsilon(1e-7));
  REQUIRE(a.top.size() == 2);
  CHECK(a.top[0].id == 1);
  CHECK(a.top[0].logprob == doctest::Approx(std::log(0.75)).epsilon(1e-7));
  CHECK(a.top[1] == TokenLogprob{0, a.logprob});
  // Eight equal logits: each ln(1/8) = -3 ln 2, whatever their value; the sum is exactly 8.
  const std::vector<float> eight(8, 5.5f);
  const TokenLogprobs b = token_logprobs(eight, 6, 3);
  CHECK(b.logprob == static_cast<float>(-std::log(8.0)));
  // Ties: lower ids first.
  CHECK(b.top == std::vector<TokenLogprob>{{0, b.logprob}, {1, b.logprob}, {2, b.logprob}});
  // k = 0: no alternatives; k past the vocabulary: all of it.
  CHECK(token_logprobs(eight, 6, 0).top.empty());
  CHECK(token_logprobs(two, 1, 20).top.size() == 2);
}

TEST_CASE("top-k order and -inf logits") {
  // logits [1, 3, 3, -inf, 2]: order 1, 2 (tie, lower id first), 4, 0, then 3 at -inf.
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, -INFINITY, 2.0f};
  const TokenLogprobs lp = token_logprobs(logits, 3, 5);
  CHECK(lp.logprob == -INFINITY);
  REQUIRE(lp.top.size() == 5);
  const std::vector<TokenId> order = {1, 2, 4, 0, 3};
  for (std::size_t i = 0; i < order.size(); ++i) CHECK(lp.top[i].id == order[i]);
  // sum = e^-2 + 1 + 1 + e^-1 (max 3): log-softmax of 4 is (2 - 3) - ln(sum).
  const double sum = std::exp(-2.0) + 2.0 + std::exp(-1.0);
  CHECK(lp.top[2].logprob == doctest::Approx(-1.0 - std::log(sum)).epsilon(1e-7));
  CHECK(lp.top[4].logprob == -INFINITY);
}

TEST_CASE("a 50,000-token row: every value within 1e-6 of a plain double log-softmax") {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<float> logits(50000);
  for (float& logit : logits) logit = normal(gen);
  logits[123] = -INFINITY;
  double max = -INFINITY;
  for (const float logit : logits) max = std::max(max, static_cast<double>(logit));
  double sum = 0.0;
  for (const float logit : logits) sum += std::exp(static_cast<double>(logit) - max);
  const double log_sum = std::log(sum);
  for (const TokenId id : {0, 4999, 49999}) {
    const TokenLogprobs lp = token_logprobs(logits, id, 20);
    CHECK(lp.logprob ==
          doctest::Approx(static_cast<double>(logits[static_cast<std::size_t>(id)]) - max - log_sum).epsilon(1e-6));
    REQUIRE(lp.top.size() == 20);
    for (std::size_t i = 0; i < lp.top.size(); ++i) {
      const float logit = logits[static_cast<std::size_t>(lp.top[i].id)];
      CHECK(lp.top[i].logprob == doctest::Approx(logit - max - log_sum).epsilon(1e-6));
      if (i > 0) CHECK(logit <= logits[static_cast<std::size_t>(lp.top[i - 1].id)]);
    }
    // Nothing outside the top 20 beats its last one.
    std::size_t num_better = 0;
    for (const float logit : logits) num_better += logit > logits[static_cast<std::size_t>(lp.top.back().id)];
    CHECK(num_better == 19);
  }
}

TEST_CASE("rank: the ids whose logit is >= the token's (ties count against it); usable rows") {
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, 0.0f, -INFINITY};
  CHECK(token_logprobs(logits, 1, 0).rank == 2);
  CHECK(token_logprobs(logits, 2, 0).rank == 2);
  CHECK(token_logprobs(logits, 0, 0).rank == 3);
  CHECK(token_logprobs(logits, 4, 0).rank == 5);
  CHECK(is_usable_logprobs_row(logits));
  CHECK_FALSE(is_usable_logprobs_row(std::vector<float>{1.0f, NAN}));
  CHECK_FALSE(is_usable_logprobs_row(std::vector<float>{INFINITY, 0.0f}));
  CHECK_FALSE(is_usable_logprobs_row(std::vector<float>{-INFINITY, -INFINITY}));
}
