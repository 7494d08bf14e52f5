// allowed_token_ids as a token mask: the bits of the ids, the intersection with a grammar's
// mask, the Sampler picking only allowed ids (whatever logit_bias says), and
// masks_leave_a_token telling a request whose masks exclude every token (allowed ids all
// banned or held back by min_tokens).
#include <doctest/doctest.h>

#include <vector>

#include "grammar/token_bitmask.h"
#include "sample/allowed_token_ids.h"
#include "sample/sampler.h"

using namespace pagedgen;

TEST_CASE("the mask has the ids' bits, over token_mask_words(vocab) words") {
  const std::vector<uint32_t> mask = allowed_ids_mask(std::vector<TokenId>{0, 33, 5, 33, 69}, 70);
  CHECK(mask == std::vector<uint32_t>{(1u << 0) | (1u << 5), 1u << 1, 1u << 5});
  std::vector<uint32_t> grammar = {0xFFu, 0u, 0xFFFFFFFFu};
  intersect_mask(grammar, mask);
  CHECK(grammar == std::vector<uint32_t>{(1u << 0) | (1u << 5), 0u, 1u << 5});
}

TEST_CASE("only allowed ids are picked, greedy or sampled") {
  const std::vector<float> logits = {3.0f, 2.0f, 1.0f, 0.5f, 4.0f};
  const std::vector<uint32_t> mask = allowed_ids_mask(std::vector<TokenId>{1, 3}, 5);
  SamplingParams params;
  params.max_tokens = 10;
  Sampler sampler;
  params.temperature = 0.0;
  CHECK(sampler.sample(logits, params, 0, {}, uint64_t{0}, mask) == TokenId{1});
  params.temperature = 1.0;
  for (uint64_t bits = 0; bits < 64; ++bits) {
    const std::optional<TokenId> id = sampler.sample(logits, params, 0, {}, bits * 0x9E3779B97F4A7C15ull, mask);
    REQUIRE(id.has_value());
    CHECK((*id == 1 || *id == 3));
  }
  // logit_bias +100 on an id outside the mask changes its logit, not the mask.
  params.temperature = 0.0;
  params.logit_bias = {{4, 100.0}, {3, 100.0}};
  const std::vector<TokenId> prompt = {0};
  CHECK(sampler.sample(logits, SamplingRow{0, &params, 0, 0, mask, prompt}, {}) == TokenId{3});
}

TEST_CASE("masks_leave_a_token: false only when the masks together exclude every token") {
  SamplingParams params;
  params.min_tokens = 1;
  const std::vector<TokenId> eog = {2};
  const std::vector<uint32_t> only_eog = allowed_ids_mask(std::vector<TokenId>{2}, 4);
  const std::vector<TokenId> prompt = {0};
  CHECK_FALSE(masks_leave_a_token(SamplingRow{0, &params, 0, 0, only_eog, prompt}, eog, 4));
  params.min_tokens = 0;
  CHECK(masks_leave_a_token(SamplingRow{0, &params, 0, 0, only_eog, prompt}, eog, 4));
  params.bad_words_ids = {{2}};
  CHECK_FALSE(masks_leave_a_token(SamplingRow{0, &params, 0, 0, only_eog, prompt}, eog, 4));
  CHECK(masks_leave_a_token(SamplingRow{0, &params, 0, 0, {}, prompt}, eog, 4));
}
