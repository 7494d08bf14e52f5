// bad_words: the banned tokens worked by hand on token ids (a word of one token, of
// several, a prefix that does not follow, only generated tokens counting), through
// masked_ids and the Sampler (greedy and sampled never pick a banned token, a logit_bias
// of +100 on it included), and the words' tokenization by vLLM's rule on the default
// model's tokenizer.
#include <doctest/doctest.h>

#include <vector>

#include "loader/model_files.h"
#include "sample/bad_words.h"
#include "sample/sampler.h"
#include "test_paths.h"
#include "util/error.h"

using namespace pagedgen;

namespace {

std::vector<TokenId> banned(const std::vector<std::vector<TokenId>>& words, const std::vector<TokenId>& generated) {
  std::vector<TokenId> out;
  append_banned_tokens(words, generated, out);
  return out;
}

}  // namespace

TEST_CASE("a word's last token is banned where the generated tokens end with its other tokens") {
  const std::vector<std::vector<TokenId>> words = {{5}, {3, 4}, {1, 2, 6}};
  CHECK(banned(words, {}) == std::vector<TokenId>{5});         // too few tokens for the others
  CHECK(banned(words, {9, 3}) == std::vector<TokenId>{5, 4});  // "3" then "4" would complete {3, 4}
  CHECK(banned(words, {3, 9}) == std::vector<TokenId>{5});     // the prefix must end the tokens
  CHECK(banned(words, {1, 2}) == std::vector<TokenId>{5, 6});  // {1, 2} then 6
  CHECK(banned(words, {2}) == std::vector<TokenId>{5});        // half a prefix bans nothing
  CHECK(banned(words, {7, 1, 2}) == std::vector<TokenId>{5, 6});
}

TEST_CASE("masked_ids: bad words after the generated tokens only, beside min_tokens' ids, in the vocabulary") {
  SamplingParams params;
  params.bad_words_ids = {{3, 4}, {9}, {12}};  // 12 is past a vocabulary of 10
  params.min_tokens = 2;
  params.stop_token_ids = {6};
  const std::vector<TokenId> eog = {0};
  std::vector<TokenId> masked;
  // Prompt {3}, nothing generated: the prompt's 3 does not start {3, 4}.
  masked_ids(params, std::vector<TokenId>{3}, 0, eog, 10, masked);
  CHECK(masked == std::vector<TokenId>{0, 6, 9});
  // Prompt {1}, generated {3}: 4 is banned; min_tokens is reached at 2, not yet.
  masked_ids(params, std::vector<TokenId>{1, 3}, 1, eog, 10, masked);
  CHECK(masked == std::vector<TokenId>{0, 4, 6, 9});
  masked_ids(params, std::vector<TokenId>{1, 3, 3}, 2, eog, 10, masked);
  CHECK(masked == std::vector<TokenId>{4, 9});
  masked_ids(params, std::vector<TokenId>{1, 3, 5}, 2, eog, 10, masked);
  CHECK(masked == std::vector<TokenId>{9});
}

TEST_CASE("the sampler never picks a banned token, greedy or sampled") {
  SamplingParams params;
  params.max_tokens = 100;
  params.bad_words_ids = {{2, 1}};
  const std::vector<float> logits = {0.0f, 5.0f, 1.0f, -1.0f};  // 1 is far the best
  const std::vector<TokenId> after_two = {0, 2};                // prompt {0}, generated {2}
  const std::vector<TokenId> after_three = {0, 3};
  Sampler sampler;
  params.temperature = 0.0;
  CHECK(sampler.sample(logits, SamplingRow{0, &params, 1, 0, {}, after_two}, {}) == TokenId{2});
  CHECK(sampler.sample(logits, SamplingRow{0, &params, 1, 0, {}, after_three}, {}) == TokenId{1});
  params.temperature = 1.0;
  for (uint64_t bits = 0; bits < 64; ++bits) {
    const uint64_t random_bits = bits * 0x9E3779B97F4A7C15ull;
    CHECK(sampler.sample(logits, SamplingRow{0, &params, 1, random_bits, {}, after_two}, {}) != TokenId{1});
  }
  // A bias changes a logit, never a mask: +100 does not bring a banned token back.
  params.temperature = 0.0;
  params.logit_bias = {{1, 100.0}};
  CHECK(sampler.sample(logits, SamplingRow{0, &params, 1, 0, {}, after_two}, {}) == TokenId{2});
}

TEST_CASE("tokenized as written and with a leading space, where that gives its own first token (vLLM's rule)") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const ModelFiles files(*test::default_model());
  const Tokenizer& tokenizer = files.tokenizer();
  const std::vector<std::string> words = {"Paris", "  big cat", "<|im_end|>"};
  const std::vector<std::vector<TokenId>> ids = tokenize_bad_words(words, tokenizer);
  const std::vector<std::vector<TokenId>> expected = {
      tokenizer.encode("Paris", true), tokenizer.encode(" Paris", true), tokenizer.encode("big cat", true),
      tokenizer.encode(" big cat", true), tokenizer.encode("<|im_end|>", true)};
  CHECK(ids == expected);
  CHECK(ids[1] == std::vector<TokenId>{7042});  // " Paris" is one token: the README's greedy example
  CHECK(ids[3].size() == 2);                    // " big", " cat"
  CHECK(ids[4] == std::vector<TokenId>{*tokenizer.find_token("<|im_end|>")});  // special text matched, as vLLM encodes
  CHECK_THROWS_WITH_AS(tokenize_bad_words(std::vector<std::string>{"x", " \t"}, tokenizer),
                       "bad_words[1] gives no token (\" \t\"); remove it", Error);
}
