// DeviceSampler against the CPU Sampler on the same logits and random bits: the same token
// (or the same "not usable") for every row, over vocabularies of 1 to 128,256 tokens, rows
// that are LLM-like, flat, tied, peaked, -inf runs, a single finite token, NaN, +inf or all
// -inf, and random mixes of greedy, temperature, top-k, top-p, min-p and min_tokens
// masking, with penalties and logit_bias on a third of the rows (their own token
// histories) and logprobs on a quarter (equal to token_logprobs' within the log's ulp),
// several rows reading one logits row as the n samples of a prompt do; then the same with a
// grammar's allowed-token mask on most rows (each row its own: one token, a few, most, every
// one; as wide as the vocabulary or a tenth shorter, as a tokenizer with fewer ids than
// the model's rows gives). Skips without a GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "device_sampler.h"
#include "grammar/token_bitmask.h"
#include "gpu_test_device.h"
#include "sample/sampler.h"
#include "sample/token_logprobs.h"
#include "sampling_rows.h"

using namespace pagedgen;

namespace {

struct Outcome {
  int num_rows = 0;
  int num_tokens = 0;  // rows that gave a token (the rest were not usable)
  int num_masked = 0;  // rows with a grammar mask
};

// A grammar's mask for a row of `vocab` ids: as wide as the vocabulary or a tenth shorter,
// allowing one token, a few, about 7 in 8, or every one.
std::vector<uint32_t> random_mask(std::size_t vocab, std::mt19937_64& gen) {
  const std::size_t ids = gen() % 2 == 0 ? vocab : std::max<std::size_t>(1, vocab - vocab / 10);
  std::vector<uint32_t> mask(token_mask_words(static_cast<int32_t>(ids)), 0u);
  const auto some_id = [&] { return static_cast<TokenId>(gen() % ids); };
  switch (gen() % 4) {
    case 0: allow_token(mask, some_id()); break;
    case 1:
      for (int i = 0; i < 6; ++i) allow_token(mask, some_id());
      break;
    case 2:
      for (std::size_t id = 0; id < ids; ++id)
        if (gen() % 8 != 0) allow_token(mask, static_cast<TokenId>(id));
      break;
    default:
      for (std::size_t id = 0; id < ids; ++id) allow_token(mask, static_cast<TokenId>(id));
  }
  return mask;
}

// num_logits_rows random rows of `vocab` logits, each sampled by rows_per_logits rows with
// their own parameters (and, with `masks`, 4 in 5 of them a grammar mask of their own, a
// third of those greedy); every device token must equal the CPU Sampler's.
Outcome check_against_cpu(std::size_t vocab, int num_logits_rows, int rows_per_logits, std::mt19937_64& gen,
                          bool masks = false) {
  std::vector<float> logits;
  for (int r = 0; r < num_logits_rows; ++r) {
    const std::vector<float> row = test::make_logits_row(vocab, static_cast<test::RowKind>(r % test::kNumRowKinds), gen);
    logits.insert(logits.end(), row.begin(), row.end());
  }
  std::deque<SamplingParams> params;  // stable addresses for SamplingRow::params
  std::deque<std::vector<TokenId>> histories;  // and for SamplingRow::tokens
  std::deque<std::vector<uint32_t>> allowed;    // and SamplingRow::allowed_tokens
  SamplingBatch batch;
  batch.end_of_generation = test::kEndOfGeneration;
  for (int r = 0; r < num_logits_rows; ++r)
    for (int s = 0; s < rows_per_logits; ++s) {
      params.push_back(test::random_sampling_params(gen));
      const auto num_generated = static_cast<int32_t>(gen() % 6);
      std::vector<TokenId>& tokens = histories.emplace_back();
      if (gen() % 3 == 0) {
        // Penalties over a history of prompt and generated ids (repeats included), and biases.
        SamplingParams& p = params.back();
        p.presence_penalty = static_cast<double>(gen() % 9) * 0.5 - 2.0;
        p.frequency_penalty = static_cast<double>(gen() % 9) * 0.25 - 1.0;
        p.repetition_penalty = gen() % 2 == 0 ? 1.0 : 0.5 + static_cast<double>(gen() % 5) * 0.3;
        for (TokenId id = 0; id < static_cast<TokenId>(vocab); id += 1 + static_cast<TokenId>(gen() % 997))
          if (gen() % 4 == 0) p.logit_bias.push_back({id, static_cast<double>(gen() % 201) - 100.0});
        tokens.resize(static_cast<std::size_t>(num_generated) + gen() % 40);
        for (TokenId& id : tokens) id = static_cast<TokenId>(gen() % std::min<std::size_t>(vocab, 50));
      }
      if (gen() % 4 == 0) params.back().logprobs = static_cast<int32_t>(gen() % (kMaxTopLogprobs + 1));
      std::vector<uint32_t>& mask = allowed.emplace_back();
      if (masks && gen() % 5 != 0) {
        mask = random_mask(vocab, gen);
        if (gen() % 3 == 0) params.back().temperature = 0.0;
      }
      batch.rows.push_back(SamplingRow{r, &params.back(), num_generated, gen(), mask, tokens});
    }
  const gpu::DeviceBuffer device_logits = test::to_device(logits);
  gpu::DeviceSampler device_sampler;
  const std::vector<SampledToken> got = device_sampler.sample(device_logits.as<float>(), num_logits_rows,
                                                              static_cast<int32_t>(vocab), batch, nullptr);
  REQUIRE(got.size() == batch.rows.size());
  Sampler sampler;
  Outcome outcome;
  for (std::size_t i = 0; i < batch.rows.size(); ++i) {
    const SamplingRow& row = batch.rows[i];
    const std::span<const float> row_logits(logits.data() + static_cast<std::size_t>(row.logits_row) * vocab, vocab);
    const std::optional<TokenId> expected = sampler.sample(row_logits, row, batch.end_of_generation);
    CAPTURE(vocab);
    CAPTURE(i);
    CAPTURE(row.logits_row % test::kNumRowKinds);
    CAPTURE(row.params->temperature);
    CAPTURE(row.params->top_k);
    CAPTURE(row.params->top_p);
    CAPTURE(row.params->min_p);
    CAPTURE(row.num_generated);
    CAPTURE(row.params->has_penalties());
    CAPTURE(row.allowed_tokens.size());
    REQUIRE(got[i].id == expected);
    if (expected && !row.allowed_tokens.empty()) REQUIRE(token_allowed(row.allowed_tokens, *expected));
    // Log probabilities from the raw row: the same ids, values within the log's ulp.
    REQUIRE(got[i].logprobs.has_value() == (expected.has_value() && row.params->logprobs.has_value()));
    if (got[i].logprobs) {
      const TokenLogprobs cpu = token_logprobs(row_logits, *expected, *row.params->logprobs);
      const auto close = [](float a, float b) { return a == b || std::abs(a - b) <= 1e-6f * std::max(1.0f, std::abs(a)); };
      CHECK(close(got[i].logprobs->logprob, cpu.logprob));
      REQUIRE(got[i].logprobs->top.size() == cpu.top.size());
      for (std::size_t j = 0; j < cpu.top.size(); ++j) {
        CHECK(got[i].logprobs->top[j].id == cpu.top[j].id);
        CHECK(close(got[i].logprobs->top[j].logprob, cpu.top[j].logprob));
      }
    }
    ++outcome.num_rows;
    outcome.num_tokens += expected.has_value();
    outcome.num_masked += !row.allowed_tokens.empty();
  }
  return outcome;
}

}  // namespace

TEST_CASE("the device sampler picks the CPU Sampler's token for every row") {
  REQUIRE_GPU();
  std::mt19937_64 gen(31337);
  Outcome total;
  // (vocab, logits rows, sampling rows per logits row)
  const struct {
    std::size_t vocab;
    int num_logits_rows;
    int rows_per_logits;
  } shapes[] = {{1, 9, 4}, {7, 27, 4}, {1000, 90, 3}, {49152, 72, 3}, {128256, 54, 2}, {128256, 300, 1}};
  for (const auto& shape : shapes) {
    const Outcome outcome = check_against_cpu(shape.vocab, shape.num_logits_rows, shape.rows_per_logits, gen);
    total.num_rows += outcome.num_rows;
    total.num_tokens += outcome.num_tokens;
  }
  MESSAGE(total.num_rows << " rows equal (" << total.num_tokens << " with a token, the rest not usable on both)");
}

TEST_CASE("with grammar masks, the device sampler picks the CPU Sampler's token for every row") {
  REQUIRE_GPU();
  std::mt19937_64 gen(4242);
  Outcome total;
  const struct {
    std::size_t vocab;
    int num_logits_rows;
    int rows_per_logits;
  } shapes[] = {{1, 9, 2}, {33, 27, 4}, {1000, 90, 3}, {49152, 72, 3}, {128256, 54, 2}};
  for (const auto& shape : shapes) {
    const Outcome outcome = check_against_cpu(shape.vocab, shape.num_logits_rows, shape.rows_per_logits, gen, true);
    total.num_rows += outcome.num_rows;
    total.num_tokens += outcome.num_tokens;
    total.num_masked += outcome.num_masked;
  }
  CHECK(total.num_masked > total.num_rows / 2);
  MESSAGE(total.num_rows << " rows equal, " << total.num_masked << " with a mask (" << total.num_tokens
                         << " with a token, the rest not usable on both)");
}

TEST_CASE("the device sampler with no rows returns none") {
  REQUIRE_GPU();
  const gpu::DeviceBuffer device_logits = test::to_device(std::vector<float>(10, 0.0f));
  gpu::DeviceSampler device_sampler;
  CHECK(device_sampler.sample(device_logits.as<float>(), 1, 10, SamplingBatch{}, nullptr).empty());
}
