// Sampler and StopChecker: hand-worked logits (greedy ties, masking, top-k/top-p/min-p
// cuts), the inverse-CDF draw checked against the RNG's own uniform, determinism, a
// full-sort reference on larger vocabularies, and stop handling across token boundaries.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "sample/sampler.h"
#include "sample/sampling_math.h"
#include "sample/stop_checker.h"

using namespace pagedgen;

namespace {

SamplingParams sampled(double temperature = 1.0) {
  SamplingParams params;
  params.temperature = temperature;
  params.max_tokens = 100;
  return params;
}

SamplingParams greedy() { return sampled(0.0); }

// The uniform the sampler will draw from a fresh Rng(seed).
double first_uniform(uint64_t seed) {
  Rng rng(seed);
  return rng.uniform_double();
}

// log of probabilities {0.5, 0.25, 0.15, 0.10}: weights relative to the max are about
// {1, 0.5, 0.3, 0.2}, total 2.0 (float rounding moves them by ~1e-7, far from every cut).
std::vector<float> four_token_logits() { return {std::log(0.5f), std::log(0.25f), std::log(0.15f), std::log(0.10f)}; }

// Deterministic, varied logits (no RNG under test involved).
std::vector<float> bumpy_logits(std::size_t vocab, uint32_t salt) {
  std::vector<float> logits(vocab);
  uint32_t x = 2463534242u ^ salt;
  for (float& logit : logits) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    logit = static_cast<float>(x % 20000) / 1000.0f - 10.0f;  // [-10, 10), 3 decimals: ties happen
  }
  return logits;
}

// Straightforward restatement of the sampler's documented procedure with a full sort and
// sequential prefix sums (the numbers themselves from sampling_math.h, as the sampler's).
TokenId reference_sample(const std::vector<float>& logits, const SamplingParams& params, Rng& rng) {
  struct C {
    uint64_t q;
    TokenId id;
  };
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  std::vector<C> all;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const uint64_t q = sampling::weight(logits[i], max_logit, 1.0 / params.temperature);
    if (q > 0) all.push_back({q, static_cast<TokenId>(i)});
  }
  std::sort(all.begin(), all.end(), [](const C& a, const C& b) { return a.q > b.q || (a.q == b.q && a.id < b.id); });
  if (params.top_k > 0 && static_cast<std::size_t>(params.top_k) < all.size()) all.resize(params.top_k);
  const auto sum = [&] {
    uint64_t total = 0;
    for (const C& c : all) total += c.q;
    return total;
  };
  if (params.top_p < 1.0) {
    const uint64_t need = sampling::top_p_last_position(params.top_p, sum()) + 1;
    uint64_t running = 0;
    std::size_t kept = 0;
    while (running < need) running += all[kept++].q;
    all.resize(kept);
  }
  if (params.min_p > 0.0)
    while (static_cast<double>(all.back().q) < params.min_p * 17592186044416.0) all.pop_back();  // 2^44
  uint64_t target = sampling::draw_target(rng.next_u64(), sum());
  for (const C& c : all) {
    if (target < c.q) return c.id;
    target -= c.q;
  }
  FAIL("target beyond the total");
  return -1;
}

}  // namespace

TEST_CASE("greedy takes the argmax, lowest id on ties, and draws nothing") {
  Sampler sampler;
  Rng rng(1);
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, 2.0f, -INFINITY};
  CHECK(sampler.sample(logits, greedy(), 0, {}, rng) == 1);
  Rng untouched(1);
  CHECK(rng.next_u64() == untouched.next_u64());

  const std::vector<float> all_equal(6, 0.5f);
  CHECK(sampler.sample(all_equal, greedy(), 0, {}, rng) == 0);
  const std::vector<float> last_best = {-5.0f, -4.0f, -1.0f};
  CHECK(sampler.sample(last_best, greedy(), 0, {}, rng) == 2);
}

TEST_CASE("a row with a NaN or +inf, or no unmasked finite logit, gives no token") {
  Sampler sampler;
  const std::vector<TokenId> eog = {1};
  SamplingParams masking = sampled();
  masking.min_tokens = 1;
  for (const SamplingParams& params : {greedy(), sampled(), masking}) {
    CHECK_FALSE(sampler.sample(std::vector<float>{0.0f, NAN, 1.0f}, params, 0, eog, uint64_t{7}).has_value());
    CHECK_FALSE(sampler.sample(std::vector<float>{0.0f, INFINITY, 1.0f}, params, 0, eog, uint64_t{7}).has_value());
    CHECK_FALSE(sampler.sample(std::vector<float>(3, -INFINITY), params, 0, eog, uint64_t{7}).has_value());
  }
  // A NaN in a masked id still breaks the row; a finite logit only at a masked id gives none.
  CHECK_FALSE(sampler.sample(std::vector<float>{0.0f, NAN}, masking, 0, eog, uint64_t{7}).has_value());
  const std::vector<float> only_eog = {-INFINITY, 2.0f, -INFINITY};
  CHECK_FALSE(sampler.sample(only_eog, masking, 0, eog, uint64_t{7}).has_value());
  CHECK(sampler.sample(only_eog, masking, 1, eog, uint64_t{7}) == 1);
}

TEST_CASE("min_tokens masks end-of-generation and stop ids until enough tokens exist") {
  Sampler sampler;
  Rng rng(1);
  const std::vector<float> logits = {0.0f, 5.0f, 1.0f, 4.0f};
  const std::vector<TokenId> eog = {1};
  SamplingParams params = greedy();
  params.min_tokens = 2;
  params.stop_token_ids = {3};
  CHECK(sampler.sample(logits, params, 0, eog, rng) == 2);  // 1 (eog) and 3 (stop id) masked
  CHECK(sampler.sample(logits, params, 1, eog, rng) == 2);
  CHECK(sampler.sample(logits, params, 2, eog, rng) == 1);  // min_tokens reached
  params.ignore_eos = true;                                 // eog is not a stop: not masked
  CHECK(sampler.sample(logits, params, 0, eog, rng) == 1);
  params.ignore_eos = false;
  params.min_tokens = 0;
  CHECK(sampler.sample(logits, params, 0, eog, rng) == 1);

  // Sampling masks the same ids: with a tiny temperature only token 2 is left near the top.
  SamplingParams hot = sampled(1e-3);
  hot.min_tokens = 1;
  hot.stop_token_ids = {3};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Rng r(seed);
    CHECK(sampler.sample(logits, hot, 0, eog, r) == 2);
  }
}

// A mask of allowed ids in the layout of grammar/token_bitmask.h, `num_words` words long.
std::vector<uint32_t> allowed_mask(std::initializer_list<TokenId> ids, std::size_t num_words) {
  std::vector<uint32_t> mask(num_words, 0);
  for (TokenId id : ids) mask[static_cast<std::size_t>(id) / 32] |= 1u << (static_cast<uint32_t>(id) % 32);
  return mask;
}

TEST_CASE("an allowed-token mask: only its tokens are picked, greedy or sampled, and ids past it never") {
  Sampler sampler;
  // 40 tokens, two mask words; the best logits sit outside the mask.
  std::vector<float> logits(40, 0.0f);
  logits[3] = 9.0f;
  logits[35] = 8.0f;
  logits[7] = 2.0f;
  logits[33] = 1.0f;
  logits[12] = 1.0f;
  const std::vector<uint32_t> mask = allowed_mask({7, 12, 33}, 2);
  Rng rng(1);
  CHECK(sampler.sample(logits, greedy(), 0, {}, rng, mask) == 7);
  CHECK(sampler.sample(logits, greedy(), 0, {}, rng) == 3);
  // Ties among allowed tokens: lowest id, as without a mask.
  CHECK(sampler.sample(logits, greedy(), 0, {}, rng, allowed_mask({12, 33}, 2)) == 12);
  // A mask one word long covers ids 0-31 only: 33 and 35 are past it.
  CHECK(sampler.sample(logits, greedy(), 0, {}, rng, allowed_mask({12}, 1)) == 12);
  std::vector<float> best_past_mask(40, -1.0f);
  best_past_mask[35] = 5.0f;
  best_past_mask[0] = -2.0f;
  CHECK(sampler.sample(best_past_mask, greedy(), 0, {}, rng, allowed_mask({0, 1}, 1)) == 1);

  // Sampled: every draw lands on an allowed token, with the frequencies of the allowed
  // tokens' renormalised probabilities (weights relative to the best allowed logit).
  std::vector<float> uniform(40, 0.0f);
  const std::vector<uint32_t> three = allowed_mask({5, 20, 39}, 2);
  std::array<int, 40> counts{};
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    Rng r(seed);
    const std::optional<TokenId> token = sampler.sample(uniform, sampled(), 0, {}, r, three);
    REQUIRE(token.has_value());
    ++counts[static_cast<std::size_t>(*token)];
  }
  CHECK(counts[5] + counts[20] + counts[39] == 3000);
  for (const int count : {counts[5], counts[20], counts[39]}) CHECK(std::abs(count - 1000) < 5 * 26);  // 5 sigma
  // The same draw with and without a mask that allows every token: the same token.
  const std::vector<float> bumpy = bumpy_logits(40, 3);
  const std::vector<uint32_t> all = {0xffffffffu, 0xffu};
  for (uint64_t seed = 0; seed < 50; ++seed) {
    Rng a(seed), b(seed);
    CHECK(sampler.sample(bumpy, sampled(0.7), 0, {}, a, all) == sampler.sample(bumpy, sampled(0.7), 0, {}, b));
  }
}

TEST_CASE("an allowed-token mask with nothing allowed, or only -inf allowed, gives no token") {
  Sampler sampler;
  const std::vector<float> logits = {1.0f, 2.0f, -INFINITY};
  for (const SamplingParams& params : {greedy(), sampled()}) {
    CHECK_FALSE(sampler.sample(logits, params, 0, {}, uint64_t{3}, allowed_mask({}, 1)).has_value());
    CHECK_FALSE(sampler.sample(logits, params, 0, {}, uint64_t{3}, allowed_mask({2}, 1)).has_value());
    CHECK(sampler.sample(logits, params, 0, {}, uint64_t{3}, allowed_mask({0, 2}, 1)) == 0);
  }
  // min_tokens masking and the allowed mask together: a token must pass both.
  SamplingParams masking = greedy();
  masking.min_tokens = 1;
  CHECK(sampler.sample(logits, masking, 0, std::vector<TokenId>{1}, uint64_t{0}, allowed_mask({0, 1}, 1)) == 0);
}

TEST_CASE("temperature 0 is greedy; a tiny temperature samples among tied maxima") {
  Sampler sampler;
  const std::vector<float> logits = {2.0f, 2.0f, 1.0f};
  // Tiny temperature: weights {1, 1, exp(-1e6) = 0}: token 0 when u < 0.5, else token 1.
  for (uint64_t seed : {0ull, 42ull}) {
    Rng greedy_rng(seed), tiny_rng(seed);
    CHECK(sampler.sample(logits, greedy(), 0, {}, greedy_rng) == 0);
    const TokenId expected = first_uniform(seed) < 0.5 ? 0 : 1;
    CHECK(sampler.sample(logits, sampled(1e-6), 0, {}, tiny_rng) == expected);
  }
  CHECK(first_uniform(0) > 0.5);  // so seed 0 shows the difference from greedy:
  Rng rng(0);
  CHECK(sampler.sample(logits, sampled(1e-6), 0, {}, rng) == 1);
  // An extreme temperature does not overflow: (logit - max) / T is 0 or -inf.
  Rng r2(0);
  CHECK(sampler.sample(logits, sampled(1e-300), 0, {}, r2) == 1);
  Rng r3(0);  // 1 / 1e-310 overflows to inf: the tied maxima still weigh 1
  CHECK(sampler.sample(logits, sampled(1e-310), 0, {}, r3) == 1);
}

TEST_CASE("top_k = 1 equals greedy") {
  Sampler sampler;
  for (uint32_t salt = 0; salt < 20; ++salt) {
    const std::vector<float> logits = bumpy_logits(3000, salt);
    Rng g(salt), k(salt);
    SamplingParams top1 = sampled(1.5);
    top1.top_k = 1;
    CHECK(sampler.sample(logits, top1, 0, {}, k) == sampler.sample(logits, greedy(), 0, {}, g));
  }
  const std::vector<float> tied = {0.0f, 7.0f, 7.0f};
  SamplingParams top1 = sampled();
  top1.top_k = 1;
  Rng rng(0);
  CHECK(sampler.sample(tied, top1, 0, {}, rng) == 1);
  // At a huge temperature every weight rounds to the best's: top_k 1 still means the best.
  SamplingParams hot = sampled(1e12);
  hot.top_k = 1;
  Rng hot_rng(0);
  CHECK(sampler.sample(std::vector<float>{1.0f, 2.0f, 3.0f}, hot, 0, {}, hot_rng) == 2);
}

TEST_CASE("inverse CDF over probabilities {0.5, 0.25, 0.15, 0.10}") {
  Sampler sampler;
  const std::vector<float> logits = four_token_logits();
  // No cut: Z = 2.0, cumulative weights 1, 1.5, 1.8, 2.0 -> u breakpoints 0.5, 0.75, 0.9.
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const double u = first_uniform(seed);
    const TokenId expected = u < 0.5 ? 0 : u < 0.75 ? 1 : u < 0.9 ? 2 : 3;
    Rng rng(seed);
    CHECK(sampler.sample(logits, sampled(), 0, {}, rng) == expected);
  }
}

TEST_CASE("top-p keeps the shortest prefix reaching p, worked by hand") {
  Sampler sampler;
  const std::vector<float> logits = four_token_logits();
  // p = 0.7: threshold 0.7 * 2.0 = 1.4; running 1.0, 1.5 -> keep {0, 1}, Z = 1.5:
  // token 0 when u * 1.5 < 1, i.e. u < 2/3.
  SamplingParams params = sampled();
  params.top_p = 0.7;
  int count[4] = {0, 0, 0, 0};
  for (uint64_t seed = 0; seed < 300; ++seed) {
    const double u = first_uniform(seed);
    Rng rng(seed);
    const TokenId token = sampler.sample(logits, params, 0, {}, rng).value();
    CHECK(token == (u < 2.0 / 3.0 ? 0 : 1));
    ++count[token];
  }
  CHECK(count[0] > 0);
  CHECK(count[1] > 0);
  // p = 0.5: the first token alone reaches 0.5 * 2.0 = 1.0.
  params.top_p = 0.5;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    Rng rng(seed);
    CHECK(sampler.sample(logits, params, 0, {}, rng) == 0);
  }
}

TEST_CASE("top-p cuts exactly at a token boundary in fixed point") {
  // 128 equal logits: every weight is 2^44, Z = 2^51. p = 0.5 needs 2^50: tokens 0..63.
  // p = 0.5 + 2^-52 needs ceil(2^50 + 0.5) = 2^50 + 1: token 64 is kept too.
  Sampler sampler;
  const std::vector<float> logits(128, 0.0f);
  for (const auto& [top_p, num_kept] : {std::pair{0.5, 64}, std::pair{0.5 + 0x1.0p-52, 65}}) {
    SamplingParams params = sampled();
    params.top_p = top_p;
    TokenId highest = 0;
    for (uint64_t seed = 0; seed < 3000; ++seed) {
      Rng peek(seed), rng(seed);
      // Equal weights: the draw picks token floor(u * num_kept) in id order.
      const auto expected = static_cast<TokenId>(((peek.next_u64() >> 11) * num_kept) >> 53);
      const TokenId token = sampler.sample(logits, params, 0, {}, rng).value();
      REQUIRE(token == expected);
      highest = std::max(highest, token);
    }
    CHECK(highest == num_kept - 1);
  }
}

TEST_CASE("top-p applies to the renormalised top-k set") {
  Sampler sampler;
  const std::vector<float> logits = four_token_logits();
  // top_k = 3 leaves weights {1, .5, .3}, total 1.8; p = 0.8 -> threshold 1.44 -> keep {0, 1}.
  // Without top_k: threshold 1.6 -> running 1, 1.5, 1.8 -> keep {0, 1, 2}.
  SamplingParams with_k = sampled();
  with_k.top_k = 3;
  with_k.top_p = 0.8;
  SamplingParams without_k = sampled();
  without_k.top_p = 0.8;
  bool saw_token_2 = false;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    const double u = first_uniform(seed);
    Rng a(seed), b(seed);
    CHECK(sampler.sample(logits, with_k, 0, {}, a) == (u < 2.0 / 3.0 ? 0 : 1));
    // Z = 1.8: breakpoints 1/1.8 and 1.5/1.8.
    const TokenId token = sampler.sample(logits, without_k, 0, {}, b).value();
    CHECK(token == (u < 1.0 / 1.8 ? 0 : u < 1.5 / 1.8 ? 1 : 2));
    saw_token_2 = saw_token_2 || token == 2;
  }
  CHECK(saw_token_2);
}

TEST_CASE("min-p keeps tokens whose probability is at least min_p times the best") {
  Sampler sampler;
  const std::vector<float> logits = four_token_logits();
  SamplingParams params = sampled();
  params.min_p = 0.35;  // weights {1, .5 | .3, .2}: keep {0, 1}
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const double u = first_uniform(seed);
    Rng rng(seed);
    CHECK(sampler.sample(logits, params, 0, {}, rng) == (u < 2.0 / 3.0 ? 0 : 1));
  }
  params.min_p = 0.25;  // keep {0, 1, 2}, Z = 1.8
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const double u = first_uniform(seed);
    Rng rng(seed);
    CHECK(sampler.sample(logits, params, 0, {}, rng) == (u < 1.0 / 1.8 ? 0 : u < 1.5 / 1.8 ? 1 : 2));
  }
  params.min_p = 1.0;  // only the best survives
  Rng rng(3);
  CHECK(sampler.sample(logits, params, 0, {}, rng) == 0);
}

TEST_CASE("temperature reshapes the weights: T = 2 takes square roots") {
  Sampler sampler;
  const std::vector<float> logits = four_token_logits();
  // Weights sqrt{1, .5, .3, .2} = {1, .70711, .54772, .44721}, Z = 2.70204.
  const double w[4] = {1.0, std::sqrt(0.5), std::sqrt(0.3), std::sqrt(0.2)};
  const double z = w[0] + w[1] + w[2] + w[3];
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const double target = first_uniform(seed) * z;
    const TokenId expected = target < w[0] ? 0 : target < w[0] + w[1] ? 1 : target < w[0] + w[1] + w[2] ? 2 : 3;
    Rng rng(seed);
    CHECK(sampler.sample(logits, sampled(2.0), 0, {}, rng) == expected);
  }
}

TEST_CASE("sampling frequencies follow the probabilities (20000 draws, 5 sigma)") {
  Sampler sampler;
  const std::vector<float> logits = four_token_logits();
  Rng rng(2024);
  int count[4] = {0, 0, 0, 0};
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) ++count[sampler.sample(logits, sampled(), 0, {}, rng).value()];
  const double p[4] = {0.5, 0.25, 0.15, 0.10};
  for (int t = 0; t < 4; ++t) {
    const double sigma = std::sqrt(draws * p[t] * (1 - p[t]));
    CHECK(std::abs(count[t] - draws * p[t]) < 5 * sigma);
  }
}

TEST_CASE("bucketed weighted selection gives exactly the full-sort reference") {
  Sampler sampler;
  struct Case {
    double temperature;
    int32_t top_k;
    double top_p;
    double min_p;
  };
  const Case cases[] = {{1.0, 0, 1.0, 0.0},  {0.7, 0, 0.9, 0.0},      {1.3, 50, 1.0, 0.0}, {1.0, 200, 0.95, 0.0},
                        {1.0, 0, 1.0, 0.05}, {2.5, 1000, 0.99, 0.01}, {5.0, 0, 1.0, 0.0},  {0.05, 0, 0.5, 0.0}};
  for (const Case& c : cases) {
    SamplingParams params = sampled(c.temperature);
    params.top_k = c.top_k;
    params.top_p = c.top_p;
    params.min_p = c.min_p;
    for (uint32_t salt = 0; salt < 6; ++salt) {
      const std::vector<float> logits = bumpy_logits(5000, salt);
      Rng a(salt * 31 + 7), b(salt * 31 + 7);
      for (int step = 0; step < 40; ++step)
        REQUIRE(sampler.sample(logits, params, 0, {}, a) == reference_sample(logits, params, b));
    }
  }
}

TEST_CASE("same seed, same tokens; another seed, other tokens") {
  Sampler sampler;
  const std::vector<float> logits = bumpy_logits(5000, 99);
  SamplingParams params = sampled(3.0);
  const auto run = [&](uint64_t seed) {
    Rng rng(seed);
    std::vector<TokenId> tokens;
    for (int i = 0; i < 50; ++i) tokens.push_back(sampler.sample(logits, params, i, {}, rng).value());
    return tokens;
  };
  CHECK(run(5) == run(5));
  CHECK(run(5) != run(6));
  Sampler other;  // a fresh scratch state gives the same result
  Rng rng(5);
  CHECK(other.sample(logits, params, 0, {}, rng) == run(5).front());
}

TEST_CASE("finish_reason_name") {
  CHECK(finish_reason_name(FinishReason::kStop) == "stop");
  CHECK(finish_reason_name(FinishReason::kLength) == "length");
}

TEST_CASE("a stop string spanning tokens cuts the text before it") {
  SamplingParams params = sampled();
  params.stop = {"END"};
  StopChecker stop(params, {});
  CHECK_FALSE(stop.append(10, "Hello E"));
  CHECK_FALSE(stop.append(11, "N"));
  CHECK(stop.append(12, "D and more") == FinishReason::kStop);
  CHECK(stop.text() == "Hello ");
  CHECK(stop.num_tokens() == 3);
  CHECK(stop.finish_reason() == FinishReason::kStop);
  stop.append_held_back("\xEF\xBF\xBD");  // after a stop string: dropped
  CHECK(stop.text() == "Hello ");
}

TEST_CASE("the earliest stop string wins, and a stop inside one token keeps what precedes it") {
  SamplingParams params = sampled();
  params.stop = {"world", "lo w", "x"};
  StopChecker stop(params, {});
  CHECK_FALSE(stop.append(1, "Hel"));
  CHECK(stop.append(2, "lo world x") == FinishReason::kStop);
  CHECK(stop.text() == "Hel");  // "lo w" starts at 3, before "world" at 6
}

TEST_CASE("stop token ids and end-of-generation stop without adding their text") {
  SamplingParams params = sampled();
  params.stop_token_ids = {7};
  const std::vector<TokenId> eog = {2};
  StopChecker by_id(params, eog);
  CHECK_FALSE(by_id.append(5, "abc"));
  CHECK(by_id.append(7, "STOP") == FinishReason::kStop);
  CHECK(by_id.text() == "abc");

  StopChecker by_eos(params, eog);
  CHECK_FALSE(by_eos.append(5, "abc"));
  CHECK(by_eos.append(2, "</s>") == FinishReason::kStop);
  CHECK(by_eos.text() == "abc");

  params.ignore_eos = true;
  params.max_tokens = 3;
  StopChecker ignoring(params, eog);
  CHECK_FALSE(ignoring.append(2, ""));
  CHECK_FALSE(ignoring.append(5, "x"));
  CHECK(ignoring.append(5, "y") == FinishReason::kLength);
  CHECK(ignoring.text() == "xy");
}

TEST_CASE("max_tokens gives length; a stop on the last token still says stop") {
  SamplingParams params = sampled();
  params.max_tokens = 2;
  params.stop = {"!"};
  StopChecker length(params, {});
  CHECK_FALSE(length.append(1, "a"));
  CHECK(length.append(1, "b") == FinishReason::kLength);
  CHECK(length.text() == "ab");
  length.append_held_back("\xEF\xBF\xBD");  // an unfinished character at the end is kept
  CHECK(length.text() == "ab\xEF\xBF\xBD");

  StopChecker both(params, {});
  CHECK_FALSE(both.append(1, "a"));
  CHECK(both.append(1, "b!") == FinishReason::kStop);
  CHECK(both.text() == "ab");

  StopChecker early(params, {});
  CHECK_FALSE(early.append(1, "a"));
  early.finish_length();
  CHECK(early.finish_reason() == FinishReason::kLength);
}

TEST_CASE("a closed structured-output value says stop, on the max_tokens-th token too") {
  SamplingParams params = sampled();
  params.max_tokens = 3;
  StopChecker closed(params, std::vector<TokenId>{2});
  CHECK_FALSE(closed.append(1, "{\"a\":"));
  CHECK(closed.append(1, "1}", true) == FinishReason::kStop);
  CHECK(closed.text() == "{\"a\":1}");
  closed.append_held_back("");
  CHECK(closed.text() == "{\"a\":1}");

  StopChecker last(params, std::vector<TokenId>{2});
  CHECK_FALSE(last.append(1, "["));
  CHECK_FALSE(last.append(1, "1"));
  CHECK(last.append(1, "]", true) == FinishReason::kStop);
  CHECK(last.num_tokens() == 3);

  StopChecker cut(params, std::vector<TokenId>{2});
  CHECK_FALSE(cut.append(1, "["));
  CHECK_FALSE(cut.append(1, "1"));
  CHECK(cut.append(1, ",") == FinishReason::kLength);
}

TEST_CASE("before min_tokens nothing stops; later only stop strings ending in new text count") {
  SamplingParams params = sampled();
  params.min_tokens = 3;
  params.stop = {"ab"};
  params.stop_token_ids = {9};
  StopChecker stop(params, std::vector<TokenId>{2});
  CHECK_FALSE(stop.append(1, "ab"));   // a complete stop string before min_tokens: ignored
  CHECK_FALSE(stop.append(9, "<9>"));  // a stop id before min_tokens (the sampler masks it)
  CHECK(stop.text() == "ab<9>");
  CHECK_FALSE(stop.append(1, "a"));  // token 3: "ab" does not end in the new text
  CHECK(stop.append(1, "b") == FinishReason::kStop);
  CHECK(stop.text() == "ab<9>");  // cut before the "a" of token 3
}

TEST_CASE("include_stop_str_in_output keeps the stop string, cut after it, and the stop token's text") {
  SamplingParams params = sampled();
  params.stop = {"lo w", "world"};
  params.stop_token_ids = {7};
  params.include_stop_str_in_output = true;
  const std::vector<TokenId> eog = {2};
  StopChecker across(params, eog);
  CHECK_FALSE(across.append(1, "Hel"));
  CHECK(across.append(3, "lo world x") == FinishReason::kStop);
  CHECK(across.text() == "Hello w");  // the earliest match kept whole; what follows it cut
  across.append_held_back("\xEF\xBF\xBD");
  CHECK(across.text() == "Hello w");

  // A stop id or end-of-generation id is decoded like any token (vLLM's detokenizer): a
  // control token gives its text only when the decoder renders special tokens.
  StopChecker by_id(params, eog);
  CHECK_FALSE(by_id.append(5, "abc"));
  CHECK(by_id.append(7, "<7>") == FinishReason::kStop);
  CHECK(by_id.text() == "abc<7>");
  by_id.append_held_back("\xEF\xBF\xBD");  // a stop token no longer closes the text
  CHECK(by_id.text() == "abc<7>\xEF\xBF\xBD");

  StopChecker by_eos(params, eog);
  CHECK_FALSE(by_eos.append(5, "lo "));
  CHECK(by_eos.append(2, "w</s>") == FinishReason::kStop);  // its text completes a stop string
  CHECK(by_eos.text() == "lo w");

  params.include_stop_str_in_output = false;
  StopChecker left_out(params, eog);
  CHECK_FALSE(left_out.append(5, "abc"));
  CHECK(left_out.append(7, "<7>") == FinishReason::kStop);
  CHECK(left_out.text() == "abc");
}
