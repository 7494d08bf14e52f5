// DeviceSampler against the CPU Sampler on the same logits and random bits: the same token
// (or the same "not usable") for every row, over vocabularies of 1 to 128,256 tokens, rows
// that are LLM-like, flat, tied, peaked, -inf runs, a single finite token, NaN, +inf or all
// -inf, and random mixes of greedy, temperature, top-k, top-p, min-p and min_tokens
// masking, with penalties and logit_bias on a third of the rows (their own token
// histories; half of them with bad words, masked ids as min_tokens' are) and logprobs on a quarter (equal to
// token_logprobs' within the log's ulp), several rows reading one logits row as the n samples of a prompt do; then the
// same with a grammar's allowed-token mask on most rows (each row its own: one token, a few, most, every one; as wide
// as the vocabulary or a tenth shorter, as a tokenizer with fewer ids than the model's rows gives). And through the
// engine on the CUDA backend (float32) against the CPU backend: greedy requests with penalties, logit_bias and logprobs
// give the same tokens up to a near-tie of the penalized logits and log probabilities within tolerance. Skips without a
// GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cuda_backend.h"
#include "device_sampler.h"
#include "engine/engine.h"
#include "engine/run_to_completion.h"
#include "gpu_test_device.h"
#include "gpu_test_model.h"
#include "grammar/token_bitmask.h"
#include "paged_batch_builder.h"
#include "sample/penalties.h"
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
    case 0:
      allow_token(mask, some_id());
      break;
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
    const std::vector<float> row =
        test::make_logits_row(vocab, static_cast<test::RowKind>(r % test::kNumRowKinds), gen);
    logits.insert(logits.end(), row.begin(), row.end());
  }
  std::deque<SamplingParams> params;           // stable addresses for SamplingRow::params
  std::deque<std::vector<TokenId>> histories;  // and for SamplingRow::tokens
  std::deque<std::vector<uint32_t>> allowed;   // and SamplingRow::allowed_tokens
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
        // Bad words (masked ids): one that follows the generated tail, so its last token is
        // banned now, one of one token, and one that does not follow.
        if (num_generated > 0 && gen() % 2 == 0)
          p.bad_words_ids = {{tokens.back(), static_cast<TokenId>(gen() % vocab)},
                             {static_cast<TokenId>(gen() % vocab)},
                             {static_cast<TokenId>(vocab), static_cast<TokenId>(gen() % vocab)}};
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
  const std::vector<SampledToken> got =
      device_sampler.sample(device_logits.as<float>(), num_logits_rows, static_cast<int32_t>(vocab), batch, nullptr);
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
    CAPTURE(row.params->bad_words_ids.size());
    CAPTURE(row.allowed_tokens.size());
    REQUIRE(got[i].id == expected);
    if (expected && !row.allowed_tokens.empty()) REQUIRE(token_allowed(row.allowed_tokens, *expected));
    // Log probabilities from the raw row: the same ids, values within the log's ulp.
    REQUIRE(got[i].logprobs.has_value() == (expected.has_value() && row.params->logprobs.has_value()));
    if (got[i].logprobs) {
      const TokenLogprobs cpu = token_logprobs(row_logits, *expected, *row.params->logprobs);
      const auto close = [](float a, float b) {
        return a == b || std::abs(a - b) <= 1e-6f * std::max(1.0f, std::abs(a));
      };
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

namespace {

// float32 logits on both backends, summed in other orders (test_gpu_backend's tolerance).
constexpr float kLogitTolerance = 2e-3f;
// A log probability is a logit minus its row's log-sum-exp: each moves by at most that.
constexpr double kLogprobTolerance = 2.0 * kLogitTolerance;
// A greedy token may differ only where the CPU's best two penalized logits are closer than
// both moving by the tolerance, scaled by a repetition penalty of up to 1.3.
constexpr float kNearTie = 2.0f * 1.3f * kLogitTolerance;
constexpr std::size_t kMaxTokens = 24;

// Greedy requests with each penalty alone, all of them with logit_bias, a bias alone, and
// none; log probabilities (3 alternatives, or 5) on every one.
std::vector<PreparedRequest> penalty_requests() {
  std::vector<PreparedRequest> requests;
  for (int32_t i = 0; i < 6; ++i) {
    PreparedRequest r;
    r.index = static_cast<uint64_t>(i);
    r.seed_key = std::to_string(i);
    for (int32_t t = 0; t < 20 + 7 * i; ++t) r.prompt_ids.push_back((i * 37 + t * 11) % 1000 + 1);
    SamplingParams& p = r.sampling;
    p.temperature = 0;
    p.max_tokens = static_cast<int32_t>(kMaxTokens);
    p.ignore_eos = true;
    p.logprobs = 3;
    if (i == 0) p.presence_penalty = 1.5;
    if (i == 1) p.frequency_penalty = 0.8;
    if (i == 2) p.repetition_penalty = 1.3;
    if (i == 3) {
      p.presence_penalty = 0.5;
      p.frequency_penalty = 0.5;
      p.repetition_penalty = 1.2;
      p.logit_bias = {{7, 5.0}, {42, -100.0}};
    }
    if (i == 4) p.logit_bias = {{r.prompt_ids.front(), 2.0}};
    if (i == 5) p.logprobs = 5;
    requests.push_back(std::move(r));
  }
  return requests;
}

// Each request's (first) completion, by request index, from the engine on `backend`.
std::vector<Completion> engine_completions(Backend& backend, const std::vector<PreparedRequest>& requests) {
  EngineConfig config;
  config.block_size = 16;
  config.num_blocks = 128;
  config.max_batch_tokens = 256;
  config.max_model_len = 1024;
  Engine engine(config, backend, nullptr);
  engine.add_requests(requests);
  std::vector<Completion> out(requests.size());
  for (const OutputRecord& record : run_to_completion(engine)) {
    REQUIRE(std::holds_alternative<RequestOutput>(record));
    const auto& output = std::get<RequestOutput>(record);
    out[output.index] = output.choices.at(0);
  }
  return out;
}

// The CPU's raw logits at each step of `completion` after the request's prompt.
std::vector<std::vector<float>> cpu_step_logits(CpuBackend& cpu, const PreparedRequest& request,
                                                const std::vector<TokenId>& completion, std::size_t vocab) {
  cpu.allocate_kv_pool(64, 16);
  test::PagedBatchBuilder builder(16, 64, 2u);
  const std::size_t seq = builder.add_sequence();
  std::vector<float> logits(vocab);
  cpu.forward(builder.step({{seq, request.prompt_ids}}), logits);
  std::vector<std::vector<float>> rows;
  for (std::size_t i = 0; i < completion.size(); ++i) {
    rows.push_back(logits);
    if (i + 1 < completion.size()) cpu.forward(builder.step({{seq, {completion[i]}}}), logits);
  }
  return rows;
}

double log_sum_exp(const std::vector<float>& row) {
  const double max = *std::max_element(row.begin(), row.end());
  double sum = 0.0;
  for (float x : row) sum += std::exp(static_cast<double>(x) - max);
  return max + std::log(sum);
}

// A device entry against the CPU's row (the raw logits, as token_logprobs reads them): every
// value the CPU's log-softmax of its id within tolerance, the alternatives in order and
// each among the CPU's `k` most likely within tolerance.
void check_logprobs(const GeneratedTokenLogprobs& entry, const std::vector<float>& row, int32_t k) {
  const double lse = log_sum_exp(row);
  const auto cpu_logprob = [&](TokenId id) { return static_cast<double>(row[static_cast<std::size_t>(id)]) - lse; };
  CHECK(std::abs(entry.token.logprob - cpu_logprob(entry.token.id)) <= kLogprobTolerance);
  REQUIRE(std::ssize(entry.top) == k);
  std::vector<float> sorted = row;
  std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(), std::greater<>());
  const double kth = static_cast<double>(sorted[static_cast<std::size_t>(k - 1)]) - lse;
  for (std::size_t j = 0; j < entry.top.size(); ++j) {
    CAPTURE(j);
    CHECK(std::abs(entry.top[j].logprob - cpu_logprob(entry.top[j].id)) <= kLogprobTolerance);
    CHECK(cpu_logprob(entry.top[j].id) >= kth - kLogprobTolerance);
    if (j > 0) CHECK(entry.top[j].logprob <= entry.top[j - 1].logprob);
  }
}

}  // namespace

// The engine hands the backend each sequence's prompt and generated tokens; the device
// applies the penalties and biases, and returns log probabilities, where the CPU backend
// does both on the host. Greedy steps of both engines are replayed on the CPU to find
// each step's penalized margin.
TEST_CASE(
    "through the engine, float32: penalties, logit_bias and logprobs on the device give the CPU backend's "
    "tokens up to a near-tie and its log probabilities within tolerance") {
  REQUIRE_GPU();
  const test::GpuTestModel& m = test::gpu_test_model();
  MESSAGE("model: " << m.name);
  const auto vocab = static_cast<std::size_t>(m.config.vocab_size);
  const std::vector<PreparedRequest> requests = penalty_requests();
  CpuBackend cpu(m.config, m.weights, 2);
  gpu::CudaBackendOptions options;
  options.dtype = gpu::DeviceDtype::F32;
  options.max_batch_tokens = 256;
  options.max_logits_rows = 8;
  gpu::CudaBackend cuda(m.config, m.tensors, m.name, options);
  const std::vector<Completion> expected = engine_completions(cpu, requests);
  const std::vector<Completion> got = engine_completions(cuda, requests);
  std::size_t compared = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    CAPTURE(i);
    const PreparedRequest& r = requests[i];
    REQUIRE(expected[i].token_ids.size() == kMaxTokens);
    REQUIRE(got[i].token_ids.size() == kMaxTokens);
    REQUIRE(got[i].logprobs.has_value());
    CpuBackend replay(m.config, m.weights, 2);
    const std::vector<std::vector<float>> rows = cpu_step_logits(replay, r, expected[i].token_ids, vocab);
    LogitPenalizer penalizer;
    std::vector<TokenId> tokens = r.prompt_ids;
    for (std::size_t step = 0; step < kMaxTokens; ++step) {
      CAPTURE(step);
      const std::span<const float> penalized =
          penalizer.apply(rows[step], r.sampling, tokens, static_cast<int32_t>(step));
      const auto best = std::max_element(penalized.begin(), penalized.end());
      float second = -INFINITY;
      for (auto it = penalized.begin(); it != penalized.end(); ++it)
        if (it != best) second = std::max(second, *it);
      // The replay reproduces the CPU engine's choice (its penalties read the same tokens).
      REQUIRE(best - penalized.begin() == expected[i].token_ids[step]);
      check_logprobs(got[i].logprobs->at(step), rows[step], *r.sampling.logprobs);
      ++compared;
      if (got[i].token_ids[step] != expected[i].token_ids[step]) {
        MESSAGE("tokens part at step " << step << " where the CPU's best two penalized logits are " << *best - second
                                       << " apart");
        CHECK(*best - second < kNearTie);
        break;
      }
      tokens.push_back(expected[i].token_ids[step]);
    }
  }
  MESSAGE(compared << " of " << requests.size() * kMaxTokens << " steps compared");
  CHECK(compared >= requests.size() * kMaxTokens / 2);
}
