// TokenMaskPack: the device sampler's layout of a step's grammar masks, on the host. A
// hand-worked pack (mask rows in sampling-row order, short masks padded with zero words,
// rows without a mask left out, a new step starting over), and the CPU Sampler picking the same token
// from a packed row as from the engine's own mask, greedy and sampled, over masks that
// leave one, a few or most tokens, with a tokenizer shorter than the model's vocabulary.
#include <doctest/doctest.h>

#include <deque>
#include <random>
#include <vector>

#include "grammar/token_bitmask.h"
#include "sample/sampler.h"
#include "sample/token_mask_pack.h"

using namespace pagedgen;

TEST_CASE("mask rows follow the sampling rows that have a mask; short masks end in zero words") {
  TokenMaskPack pack;
  pack.clear(70);  // 3 words per row: ids 0..95, of which 70 exist
  CHECK(pack.words_per_row() == 3);
  const std::vector<uint32_t> full = {0x1u, 0x80000000u, 0x3fu};  // ids 0, 63, 64..69
  const std::vector<uint32_t> short_mask = {0x0u, 0x5u};          // a 40-id tokenizer: ids 32, 34
  CHECK(pack.add(full) == 0);
  CHECK(pack.add({}) == std::nullopt);  // no grammar
  CHECK(pack.add(short_mask) == 1);
  CHECK(pack.add(short_mask) == 2);  // another sample on the same logits row: its own row
  CHECK(pack.num_rows() == 3);
  CHECK(std::vector<uint32_t>(pack.words().begin(), pack.words().end()) ==
        std::vector<uint32_t>{0x1u, 0x80000000u, 0x3fu, 0x0u, 0x5u, 0x0u, 0x0u, 0x5u, 0x0u});
  CHECK(std::vector<uint32_t>(pack.row(1).begin(), pack.row(1).end()) == std::vector<uint32_t>{0x0u, 0x5u, 0x0u});

  pack.clear(32);  // a new step: rows start at 0 again, 1 word each
  CHECK(pack.num_rows() == 0);
  CHECK(pack.words().empty());
  CHECK(pack.add(std::vector<uint32_t>{0x10u}) == 0);
  CHECK(std::vector<uint32_t>(pack.words().begin(), pack.words().end()) == std::vector<uint32_t>{0x10u});
}

TEST_CASE("the CPU Sampler picks the same token from a packed mask row as from the engine's mask") {
  std::mt19937_64 gen(12);
  constexpr int32_t kModelVocab = 1000;     // the logits' width
  constexpr int32_t kTokenizerVocab = 900;  // the grammar's masks cover 29 words, the pack's rows 32
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::deque<SamplingParams> params;
  std::deque<std::vector<uint32_t>> masks;
  std::vector<SamplingRow> rows;
  std::vector<std::vector<float>> logits;
  TokenMaskPack pack;
  pack.clear(kModelVocab);
  std::vector<std::optional<int32_t>> mask_rows;
  for (int r = 0; r < 120; ++r) {
    std::vector<float>& row_logits = logits.emplace_back(kModelVocab);
    for (float& x : row_logits) x = normal(gen);
    SamplingParams& p = params.emplace_back();
    p.temperature = r % 3 == 0 ? 0.0 : 0.7 + 0.1 * (r % 5);
    if (r % 4 == 1) p.top_k = 5;
    if (r % 4 == 2) p.top_p = 0.8;
    std::vector<uint32_t>& mask = masks.emplace_back(token_mask_words(kTokenizerVocab), 0u);
    const int kind = r % 4;  // one token, a few, most of them, or no mask
    if (kind == 0) allow_token(mask, static_cast<TokenId>(gen() % kTokenizerVocab));
    if (kind == 1)
      for (int i = 0; i < 5; ++i) allow_token(mask, static_cast<TokenId>(gen() % kTokenizerVocab));
    if (kind == 2)
      for (TokenId id = 0; id < kTokenizerVocab; ++id)
        if (gen() % 8 != 0) allow_token(mask, id);
    if (kind == 3) mask.clear();
    rows.push_back(SamplingRow{r, &p, 3, gen(), mask, {}});
    mask_rows.push_back(pack.add(mask));
  }
  Sampler sampler;
  int num_masked = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CAPTURE(i);
    const SamplingRow& row = rows[i];
    REQUIRE(mask_rows[i].has_value() == !row.allowed_tokens.empty());
    SamplingRow packed = row;
    if (mask_rows[i]) {
      packed.allowed_tokens = pack.row(*mask_rows[i]);
      ++num_masked;
    }
    const std::optional<TokenId> expected = sampler.sample(logits[i], row, {});
    REQUIRE(expected.has_value());
    if (!row.allowed_tokens.empty()) CHECK(token_allowed(row.allowed_tokens, *expected));
    CHECK(sampler.sample(logits[i], packed, {}) == expected);
  }
  CHECK(num_masked == 90);
  CHECK(pack.num_rows() == 90);
}
