// Prompt log probabilities (prompt_logprobs, echo) on the default model, CPU backend, the
// CLI's fast path (weights kept quantized, float16 KV):
//   - against the backend's own logits: every prompt token's logprob, top k and rank equal
//     a double log-softmax of the logits a fresh backend gives each prompt position (1e-5);
//   - against generation: a greedy run with logprobs, then its prompt + output scored with
//     echo (the text, re-tokenized: the ids of the common prefix compared) and as token ids
//     (all compared); the generated tokens' values agree within 1e-5 (the maximum printed);
//   - cache hits change no value: the scoring batch (a scoring request beside requests
//     that share its prefix, chunked prefills) at block sizes 8, 16 and 32, sharing on and
//     off, gives the same values as the first run; so do small pools where scoring
//     requests are preempted and compute their prompt again;
//   - the CLI: plain and OpenAI lines through the binary (echo, token ids, max_tokens 0).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "cpu/cpu_backend.h"
#include "engine/engine.h"
#include "job/prompt_builder.h"
#include "loaded_model.h"
#include "paged_batch_builder.h"
#include "test_paths.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

namespace fs = std::filesystem;

constexpr const char* kPrompt = "The three primary colors are red, yellow and blue; mixing two of them gives";

const LoadedModel* fast_model() { return loaded_default_model(WeightForm::kPackedWhereQuantized); }

PreparedRequest prepare(const LoadedModel& model, uint64_t index, decltype(Request::input) input,
                        SamplingParams sampling) {
  const PromptBuilder builder(model.files.tokenizer(), std::nullopt, "", model.files.config().context_length);
  Request request;
  request.index = index;
  request.seed_key = fmt::format("#{}", index);
  request.input = std::move(input);
  request.sampling = std::move(sampling);
  return std::get<PreparedRequest>(builder.build(request));
}

// The batch's outputs in input order, run on a fresh engine with a pool of `num_tokens`
// token slots; adds to `scoring_preempted`, when given, the scoring sequences preempted.
std::vector<RequestOutput> run(const LoadedModel& model, std::vector<PreparedRequest> requests, int32_t block_size,
                               bool sharing, int32_t num_tokens = 1024,
                               std::set<uint64_t>* scoring_preempted = nullptr) {
  CpuBackend backend(model.files.config(), model.weights, 2, cpu::best_cpu_isa(), KvDtype::kFloat16);
  EngineConfig config{.block_size = block_size,
                      .num_blocks = num_tokens / block_size,
                      .max_num_seqs = 4,
                      .max_batch_tokens = 24,  // prompts are prefilled in chunks
                      .prefix_sharing = sharing,
                      .max_model_len = model.files.config().context_length};
  Engine engine(config, backend, &model.files.tokenizer());
  engine.add_requests(std::move(requests));
  std::vector<RequestOutput> outputs;
  while (engine.has_unfinished()) {
    for (OutputRecord& record : engine.step().finished) outputs.push_back(std::get<RequestOutput>(std::move(record)));
    if (scoring_preempted == nullptr || !engine.has_unfinished()) continue;
    for (const uint64_t id : engine.scheduler().waiting())
      if (engine.scheduler().sequence(id).scores_prompt && engine.scheduler().sequence(id).num_preemptions > 0)
        scoring_preempted->insert(id);
  }
  std::ranges::sort(outputs, {}, &RequestOutput::index);
  return outputs;
}

// The logits of every position of `prompt`, from one prefill on a fresh backend.
std::vector<std::vector<float>> prompt_logits(const LoadedModel& model, const std::vector<TokenId>& prompt) {
  const auto vocab = static_cast<std::size_t>(model.files.config().vocab_size);
  CpuBackend backend(model.files.config(), model.weights, 2, cpu::best_cpu_isa(), KvDtype::kFloat16);
  backend.allocate_kv_pool(16, 16);
  PagedBatchBuilder builder(16, 16, 3);
  StepBatch batch = builder.step({{builder.add_sequence(), prompt}});
  batch.logits_rows.resize(prompt.size());
  std::iota(batch.logits_rows.begin(), batch.logits_rows.end(), 0);
  std::vector<float> logits(prompt.size() * vocab);
  backend.forward(batch, logits);
  std::vector<std::vector<float>> rows;
  for (std::size_t i = 0; i < prompt.size(); ++i)
    rows.emplace_back(logits.begin() + static_cast<std::ptrdiff_t>(i * vocab),
                      logits.begin() + static_cast<std::ptrdiff_t>((i + 1) * vocab));
  return rows;
}

// The largest difference between two entries' values (token and top k, which must name the
// same ids in the same order).
double max_difference(const GeneratedTokenLogprobs& a, const GeneratedTokenLogprobs& b) {
  REQUIRE(a.token.id == b.token.id);
  REQUIRE(a.top.size() == b.top.size());
  double diff = std::abs(a.token.logprob - b.token.logprob);
  for (std::size_t j = 0; j < a.top.size(); ++j) {
    CHECK(a.top[j].id == b.top[j].id);
    diff = std::max(diff, static_cast<double>(std::abs(a.top[j].logprob - b.top[j].logprob)));
  }
  return diff;
}

// The scores of the batch of the generation test (1, 3: prompt_logprobs; 2: echo) are the
// same bits in both runs.
void check_same_scores(const std::vector<RequestOutput>& out, const std::vector<RequestOutput>& first) {
  for (std::size_t r = 1; r < 4; ++r) {
    const auto& a = r == 2 ? *out[r].echo_logprobs : *out[r].prompt_logprobs;
    const auto& b = r == 2 ? *first[r].echo_logprobs : *first[r].prompt_logprobs;
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 1; i < a.size(); ++i) CHECK(max_difference(a[i], b[i]) == 0.0);
  }
}

SamplingParams scoring(int32_t num_top) {
  SamplingParams params;
  params.max_tokens = 0;
  params.prompt_logprobs = num_top;
  return params;
}

}  // namespace

TEST_CASE("prompt_logprobs: log-softmax of the CPU backend's own logits at every prompt position, to 1e-5") {
  const LoadedModel* model = fast_model();
  if (model == nullptr) {
    MESSAGE("skipped: the default model is not installed (scripts/fetch-model.sh)");
    return;
  }
  const std::vector<RequestOutput> out = run(*model, {prepare(*model, 0, std::string(kPrompt), scoring(4))}, 16, true);
  REQUIRE(out.size() == 1);
  REQUIRE(out[0].prompt_logprobs.has_value());
  CHECK(out[0].choices[0].num_tokens == 0);  // max_tokens 0: scored, nothing generated
  const std::vector<GeneratedTokenLogprobs>& entries = *out[0].prompt_logprobs;
  std::vector<TokenId> prompt;
  for (const GeneratedTokenLogprobs& e : entries) prompt.push_back(e.token.id);
  REQUIRE(prompt.size() == static_cast<std::size_t>(out[0].prompt_tokens));
  const std::vector<std::vector<float>> rows = prompt_logits(*model, prompt);
  double max_diff = 0.0;
  for (std::size_t i = 1; i < entries.size(); ++i) {
    CAPTURE(i);
    const std::vector<float>& row = rows[i - 1];  // position i - 1 predicts token i
    const double max = *std::max_element(row.begin(), row.end());
    double sum = 0.0;
    for (const float logit : row) sum += std::exp(static_cast<double>(logit) - max);
    const auto log_softmax = [&](TokenId id) { return row[static_cast<std::size_t>(id)] - max - std::log(sum); };
    max_diff = std::max(max_diff, std::abs(entries[i].token.logprob - log_softmax(prompt[i])));
    const float logit = row[static_cast<std::size_t>(prompt[i])];
    CHECK(entries[i].rank == std::ranges::count_if(row, [&](float x) { return x >= logit; }));
    std::vector<TokenId> order(row.size());
    std::iota(order.begin(), order.end(), 0);
    std::ranges::stable_sort(order, [&](TokenId a, TokenId b) {
      return row[static_cast<std::size_t>(a)] > row[static_cast<std::size_t>(b)];
    });
    REQUIRE(entries[i].top.size() == 4);
    for (std::size_t j = 0; j < 4; ++j) {
      CHECK(entries[i].top[j].id == order[j]);
      max_diff = std::max(max_diff, std::abs(entries[i].top[j].logprob - log_softmax(order[j])));
    }
  }
  MESSAGE(
      fmt::format("{} prompt tokens; largest difference from the hand log-softmax {:.3g}", prompt.size(), max_diff));
  CHECK(max_diff <= 1e-5);
  CHECK(entries[0].top.empty());
  // A prompt of token ids is checked against the vocabulary when it is built.
  Request ids;
  ids.input = std::vector<TokenId>{1, 2, 49152};
  const auto built = PromptBuilder(model->files.tokenizer(), std::nullopt, "", 2048).build(ids);
  REQUIRE(std::holds_alternative<RequestError>(built));
  CHECK(std::get<RequestError>(built).message ==
        "prompt[2] is 49152, not a token id of this model (its vocabulary has ids 0 to 49151)");
}

TEST_CASE("prompt_logprobs and echo: generated logprobs scored again agree, at every block size, sharing on and off") {
  const LoadedModel* model = fast_model();
  if (model == nullptr) {
    MESSAGE("skipped: the default model is not installed (scripts/fetch-model.sh)");
    return;
  }
  SamplingParams greedy;
  greedy.temperature = 0.0;
  greedy.max_tokens = 8;
  greedy.logprobs = 3;
  const std::vector<RequestOutput> generated =
      run(*model, {prepare(*model, 0, std::string(kPrompt), greedy)}, 16, true);
  const Completion& completion = generated[0].choices[0];
  REQUIRE(completion.logprobs.has_value());
  const std::vector<TokenId> prompt_ids = prepare(*model, 0, std::string(kPrompt), greedy).prompt_ids;
  std::vector<TokenId> all_ids = prompt_ids;
  all_ids.insert(all_ids.end(), completion.token_ids.begin(), completion.token_ids.end());

  SamplingParams echo = scoring(3);
  echo.prompt_logprobs.reset();
  echo.echo = true;
  echo.logprobs = 3;
  // Beside the scoring requests, one that extends their prompt and generates: with sharing
  // it reads the blocks they computed (scoring requests themselves read none).
  std::vector<TokenId> extended = all_ids;
  extended.push_back(prompt_ids.back());
  SamplingParams extending = greedy;
  extending.max_tokens = 3;
  std::vector<PreparedRequest> batch = {
      prepare(*model, 0, extended, extending), prepare(*model, 1, all_ids, scoring(3)),
      prepare(*model, 2, std::string(kPrompt) + completion.text, echo), prepare(*model, 3, all_ids, scoring(3))};
  std::optional<std::vector<RequestOutput>> first;
  for (const int32_t block_size : {8, 16, 32}) {
    for (const bool sharing : {true, false}) {
      CAPTURE(block_size);
      CAPTURE(sharing);
      const std::vector<RequestOutput> out = run(*model, batch, block_size, sharing);
      REQUIRE(out.size() == 4);
      // Token ids: every generated token compared.
      const std::vector<GeneratedTokenLogprobs>& ids_entries = *out[1].prompt_logprobs;
      REQUIRE(ids_entries.size() == all_ids.size());
      double max_diff = 0.0;
      for (std::size_t i = 0; i < completion.token_ids.size(); ++i)
        max_diff = std::max(max_diff, max_difference(ids_entries[prompt_ids.size() + i], (*completion.logprobs)[i]));
      // Text, re-tokenized: the generated tokens within the ids both runs share.
      REQUIRE(out[2].echo_logprobs.has_value());
      CHECK(out[2].echo_text == std::string(kPrompt) + completion.text);
      CHECK_FALSE(out[2].prompt_logprobs.has_value());
      const std::vector<GeneratedTokenLogprobs>& text_entries = *out[2].echo_logprobs;
      std::size_t common = 0;
      while (common < text_entries.size() && common < all_ids.size() &&
             text_entries[common].token.id == all_ids[common])
        ++common;
      REQUIRE(common >= prompt_ids.size());
      for (std::size_t i = prompt_ids.size(); i < common; ++i)
        max_diff = std::max(max_diff, max_difference(text_entries[i], (*completion.logprobs)[i - prompt_ids.size()]));
      MESSAGE(
          fmt::format("block size {}, sharing {}: {} of {} generated tokens re-tokenize the same; largest "
                      "difference from the generated logprobs {:.3g}; the extending request read {} tokens "
                      "from the cache",
                      block_size, sharing, common - prompt_ids.size(), completion.token_ids.size(), max_diff,
                      out[0].cached_tokens));
      CHECK(max_diff <= 1e-5);
      CHECK(out[1].cached_tokens == 0);  // scoring reads nothing from the prefix cache
      CHECK(out[3].cached_tokens == 0);
      if (block_size <= 16) CHECK((out[0].cached_tokens > 0) == sharing);
      // Every value equals the first configuration's: cache hits, block sizes and chunking
      // change none.
      if (!first) {
        first = out;
        continue;
      }
      CHECK(out[0].choices[0].token_ids == (*first)[0].choices[0].token_ids);
      const auto& generated_now = *out[0].choices[0].logprobs;
      for (std::size_t i = 0; i < generated_now.size(); ++i)
        CHECK(max_difference(generated_now[i], (*(*first)[0].choices[0].logprobs)[i]) == 0.0);
      check_same_scores(out, *first);
    }
  }
  // Pools too small for the batch at once, two more generating requests beside it:
  // preempted scoring requests compute their prompt again, and their rows come again with
  // the same values.
  extending.max_tokens = 8;
  batch.push_back(prepare(*model, 4, extended, extending));
  batch.push_back(prepare(*model, 5, all_ids, extending));
  std::vector<TokenId> twice = all_ids;
  twice.insert(twice.end(), all_ids.begin(), all_ids.end());
  batch.push_back(prepare(*model, 6, twice, scoring(3)));  // a third chunk to preempt it in
  const std::vector<GeneratedTokenLogprobs> twice_alone = *run(*model, {batch.back()}, 8, true)[0].prompt_logprobs;
  std::size_t num_preempted = 0;
  for (const int32_t num_tokens : {56, 64, 72, 80}) {
    CAPTURE(num_tokens);
    std::set<uint64_t> preempted;
    const std::vector<RequestOutput> out = run(*model, batch, 8, true, num_tokens, &preempted);
    check_same_scores(out, *first);
    for (std::size_t i = 1; i < twice_alone.size(); ++i)
      CHECK(max_difference((*out[6].prompt_logprobs)[i], twice_alone[i]) == 0.0);
    num_preempted += preempted.size();
  }
  MESSAGE(fmt::format("{} scoring sequences preempted in the small pools", num_preempted));
  CHECK(num_preempted > 0);
}

TEST_CASE("prompt_logprobs, echo and token-id prompts through the CLI, plain and OpenAI lines") {
  if (fast_model() == nullptr) {
    MESSAGE("skipped: the default model is not installed (scripts/fetch-model.sh)");
    return;
  }
  const fs::path dir = scratch_dir("prompt-logprobs");
  {
    std::ofstream plain(dir / "plain.jsonl");
    plain << R"({"id": 1, "prompt": "Paris is the capital of", "max_tokens": 0, "prompt_logprobs": 2})"
          << "\n"
          << R"({"id": 2, "prompt": [1, 2, 3], "max_tokens": 2})"
          << "\n";
    std::ofstream openai(dir / "openai.jsonl");
    openai << R"({"custom_id": "a", "method": "POST", "url": "/v1/completions", "body": {"prompt": )"
           << R"("Paris is the capital of", "max_tokens": 1, "echo": true, "logprobs": 1, "prompt_logprobs": 1}})"
           << "\n"
           << R"({"custom_id": "b", "method": "POST", "url": "/v1/chat/completions", "body": {"messages": )"
           << R"([{"role": "user", "content": "Hi"}], "max_tokens": 1, "prompt_logprobs": 0}})"
           << "\n";
  }
  simdjson::dom::parser parser;
  const std::vector<std::string> plain = complete_lines(run_generate(dir, dir / "plain.jsonl", "plain.out", "").output);
  REQUIRE(plain.size() == 2);
  const simdjson::dom::element scored = parser.parse(plain[0]).value();
  CHECK(scored["text"].get_string().value() == "");
  CHECK(scored["prompt_logprobs"].at(0).is_null());
  CHECK(scored["prompt_logprobs"].at(1)["top_logprobs"].get_array().value().size() == 2);
  CHECK(parser.parse(plain[1]).value()["usage"]["prompt_tokens"].get_int64().value() == 3);  // the ids as given
  const std::vector<std::string> openai =
      complete_lines(run_generate(dir, dir / "openai.jsonl", "openai.out", "").output);
  REQUIRE(openai.size() == 2);
  const simdjson::dom::element completion = parser.parse(openai[0]).value()["response"]["body"]["choices"].at(0);
  CHECK(std::string(completion["text"].get_string().value()).starts_with("Paris is the capital of"));
  CHECK(completion["logprobs"]["token_logprobs"].at(0).is_null());
  CHECK(completion["logprobs"]["text_offset"].at(1).get_int64().value() == 5);  // " is" after "Paris"
  CHECK(completion["prompt_logprobs"].at(0).is_null());
  const std::string chat = openai[1];
  const simdjson::dom::element chat_body = parser.parse(chat).value()["response"]["body"];
  CHECK(chat_body["prompt_logprobs"].at(0).is_null());
  CHECK(chat_body["prompt_logprobs"].get_array().value().size() ==
        static_cast<std::size_t>(chat_body["usage"]["prompt_tokens"].get_int64().value()));
}
