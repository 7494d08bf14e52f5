// Penalties and biases (the sampler's step 0, sample/penalties.h): exact penalized logits
// worked out by hand on small vocabularies (every value below is exact in binary, so the
// expected floats are exact), the tokens each penalty reaches (prompt and generated for
// repetition_penalty, generated only for frequency and presence), vLLM's order (bias,
// repetition, frequency and presence), one rounding to float, and the Sampler picking from
// the penalized row.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "sample/penalties.h"
#include "sample/sampler.h"

using namespace pagedgen;

namespace {

std::vector<float> penalize(const std::vector<float>& logits, const SamplingParams& params,
                            const std::vector<TokenId>& tokens, int32_t num_generated) {
  LogitPenalizer penalizer;
  const std::span<const float> row = penalizer.apply(logits, params, tokens, num_generated);
  return std::vector<float>(row.begin(), row.end());
}

}  // namespace

TEST_CASE("all four together: bias, then repetition over prompt and generated, then frequency and presence") {
  // vocab 6, logits [2, -1, 0.5, 3, -2, 0]; prompt [0, 4], generated [3, 3, 1]
  // repetition 2, frequency 0.5, presence 0.25, logit_bias {2: +1.5, 3: -1}
  //   id 0: prompt, 2 > 0 -> 2 / 2                                   =  1
  //   id 1: generated once: -1 <= 0 -> -1 * 2 = -2; - 0.5 * 1 - 0.25 = -2.75
  //   id 2: bias only: 0.5 + 1.5                                      =  2
  //   id 3: 3 - 1 = 2; generated twice: 2 / 2 = 1; - 0.5 * 2 - 0.25  = -0.25
  //   id 4: prompt, -2 * 2                                            = -4
  //   id 5: untouched                                                 =  0
  SamplingParams params;
  params.repetition_penalty = 2.0;
  params.frequency_penalty = 0.5;
  params.presence_penalty = 0.25;
  params.logit_bias = {{2, 1.5}, {3, -1.0}};
  CHECK(penalize({2, -1, 0.5, 3, -2, 0}, params, {0, 4, 3, 3, 1}, 3) ==
        std::vector<float>{1, -2.75f, 2, -0.25f, -4, 0});

  std::vector<TokenPenalty> changed;
  std::vector<TokenId> scratch;
  find_penalized_tokens(params, std::vector<TokenId>{0, 4, 3, 3, 1}, 3, 6, changed, scratch);
  CHECK(changed ==
        std::vector<TokenPenalty>{
            {0, 0.0, 0, true}, {1, 0.0, 1, true}, {2, 1.5, 0, false}, {3, -1.0, 2, true}, {4, 0.0, 0, true}});
}

TEST_CASE("frequency and presence count generated tokens only (OpenAI), repetition the prompt too (HF, vLLM)") {
  // logits [2, 0.5, 0, 1]; prompt [0, 3], generated [2, 2, 2, 1]
  SamplingParams openai;
  openai.frequency_penalty = 0.25;
  openai.presence_penalty = 0.5;
  //   id 0, 3: prompt only, untouched; id 1: 0.5 - 0.25 - 0.5 = -0.25; id 2: 0 - 0.75 - 0.5 = -1.25
  CHECK(penalize({2, 0.5, 0, 1}, openai, {0, 3, 2, 2, 2, 1}, 4) == std::vector<float>{2, -0.25f, -1.25f, 1});
  // Negative penalties reward repetition: id 2: 0 + 0.75 + 0.5 = 1.25.
  openai.frequency_penalty = -0.25;
  openai.presence_penalty = -0.5;
  CHECK(penalize({2, 0.5, 0, 1}, openai, {0, 3, 2, 2, 2, 1}, 4) == std::vector<float>{2, 1.25f, 1.25f, 1});

  SamplingParams repetition;
  repetition.repetition_penalty = 4.0;
  //   id 0: 2 / 4 = 0.5 (prompt); id 1: 0.5 / 4 = 0.125; id 2: 0 stays 0 (0 * 4); id 3: 1 / 4 = 0.25 (prompt)
  // Counting does not matter: three occurrences are penalized once.
  CHECK(penalize({2, 0.5, 0, 1}, repetition, {0, 3, 2, 2, 2, 1}, 4) == std::vector<float>{0.5f, 0.125f, 0, 0.25f});
  // Below 1 it rewards: positive logits grow, negative ones shrink towards 0.
  repetition.repetition_penalty = 0.5;
  CHECK(penalize({2, -3, 0, 1}, repetition, {1, 0}, 1) == std::vector<float>{4, -1.5f, 0, 1});
}

TEST_CASE("one rounding to float, -inf stays -inf, ids past the row are left out") {
  SamplingParams params;
  params.repetition_penalty = 3.0;
  // 1 / 3 in double, then rounded to float once.
  CHECK(penalize({1, 0}, params, {0}, 0)[0] == static_cast<float>(1.0 / 3.0));
  params.logit_bias = {{1, 100.0}, {9, -100.0}};
  const std::vector<float> row = penalize({1, -INFINITY}, params, {1, 1}, 1);
  CHECK(row[1] == -INFINITY);  // (-inf + 100) * 3 - 0
  std::vector<TokenPenalty> changed;
  std::vector<TokenId> scratch;
  find_penalized_tokens(params, std::vector<TokenId>{7, 1}, 1, 2, changed, scratch);
  CHECK(changed == std::vector<TokenPenalty>{{1, 100.0, 1, true}});  // 7 and the bias of 9 are past a row of 2
  // penalized_logit itself: a token of the sequence with no penalty keeps its logit exactly.
  CHECK(sampling::penalized_logit(0.1f, 0.0, true, 5, sampling::Penalties{}) == 0.1f);
}

TEST_CASE("the Sampler picks from the penalized row: greedy and sampled") {
  Sampler sampler;
  SamplingParams params;
  params.temperature = 0.0;
  params.presence_penalty = 0.5;
  const std::vector<float> logits = {1.0f, 0.75f, 0.0f};
  const std::vector<TokenId> tokens = {2, 0};  // prompt [2], generated [0]
  // Without the penalty token 0 wins; with it 0.5 < 0.75.
  CHECK(sampler.sample(logits, SamplingRow{0, &params, 1, 0, {}, tokens}, {}) == 1);
  params.presence_penalty = 0.0;
  CHECK(sampler.sample(logits, SamplingRow{0, &params, 1, 0, {}, tokens}, {}) == 0);
  // logit_bias -100 bans a token, +100 forces one, sampled at temperature 1 too.
  params.logit_bias = {{0, -100.0}, {2, 100.0}};
  CHECK(sampler.sample(logits, SamplingRow{0, &params, 1, 0, {}, tokens}, {}) == 2);
  params.temperature = 1.0;
  for (uint64_t bits : {uint64_t{0}, uint64_t{1} << 63, ~uint64_t{0}})
    CHECK(sampler.sample(logits, SamplingRow{0, &params, 1, bits, {}, tokens}, {}) == 2);
  params.logit_bias = {{0, -100.0}};
  int num_one = 0;
  for (uint64_t bits = 0; bits < 64; ++bits) {
    const std::optional<TokenId> token = sampler.sample(logits, SamplingRow{0, &params, 1, bits << 58, {}, tokens}, {});
    REQUIRE(token.has_value());
    CHECK(*token != 0);  // 1 - 100 is 99.75 below the best: weight 0
    num_one += *token == 1;
  }
  // Tokens 1 and 2 weigh e^0 : e^-0.75 (2^44 : 0.472 * 2^44): draw u = b / 64 picks token 1
  // while u * 1.472 < 1, i.e. b <= 43: 44 of the 64 draws.
  CHECK(num_one == 44);
}
