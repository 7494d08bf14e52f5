// The output processor on its own (core/engine/output_processor.h), driven step by step the
// way Engine::step drives it, with hand-made token ids instead of a backend: which rows each
// step samples, how tokens become records, the fork of n > 1 samples, a failed row, and the
// overlap (rows overlapped, the ids applied one step later) giving the same
// records as applying each step's ids at once.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/output_processor.h"
#include "sched/scheduler.h"

using namespace pagedgen;

namespace {

PreparedRequest request(uint64_t index, std::vector<TokenId> prompt, int32_t max_tokens, int32_t n = 1) {
  PreparedRequest r;
  r.index = index;
  r.seed_key = "line" + std::to_string(index);
  r.prompt_ids = std::move(prompt);
  r.sampling.max_tokens = max_tokens;
  r.sampling.n = n;
  return r;
}

// The id a hand-made backend gives row `row` of step `step`: 1000 + 100 * step + row, so a
// record's tokens say which step and row each came from. nullopt: that row has no token.
using TokenRule = std::optional<TokenId> (*)(int32_t step, int32_t row);
std::optional<TokenId> step_and_row(int32_t step, int32_t row) { return 1000 + 100 * step + row; }

// Runs a batch to the end without a tokenizer (samples end by length only), the way
// Engine::step orders the calls; with `overlap`, every step whose rows allow it is
// overlapped and its ids applied during the next step. Records by request index; also the
// number of rows each step sampled.
struct Run {
  std::map<uint64_t, OutputRecord> records;
  std::vector<int32_t> rows_per_step;
  int32_t steps_overlapped = 0;
};

Run run(std::vector<PreparedRequest> requests, bool overlap, TokenRule rule = step_and_row) {
  Scheduler scheduler(SchedulerConfig{.max_num_seqs = 8, .max_batch_tokens = 64},
                      KvCacheConfig{.num_blocks = 64, .block_size = 4, .enable_prefix_caching = true});
  EngineStats stats;
  OutputProcessor processor(nullptr, /*run_seed=*/7, /*max_model_len=*/256, stats);
  std::vector<int32_t> order(requests.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  processor.start_batch(std::move(requests), order, scheduler);

  Run result;
  std::vector<SampledToken> overlap_tokens;  // the ids of the step overlapped
  auto tokens_for = [&](const SamplingBatch& batch, int32_t step) {
    std::vector<SampledToken> tokens(batch.rows.size());
    for (std::size_t row = 0; row < tokens.size(); ++row) tokens[row].id = rule(step, static_cast<int32_t>(row));
    return tokens;
  };
  for (int32_t step = 0; scheduler.has_unfinished() || processor.has_overlapped_step(); ++step) {
    REQUIRE(step < 100);
    if (!scheduler.has_unfinished()) {  // only the last step's ids are left
      processor.finish_overlap(overlap_tokens);
      break;
    }
    const SchedulerOutput out = scheduler.schedule();
    processor.reject(out.rejected);
    if (out.scheduled.empty()) {
      if (processor.has_overlapped_step()) processor.finish_overlap(overlap_tokens);
      continue;
    }
    const SamplingBatch batch = processor.sampling_batch(out);
    result.rows_per_step.push_back(static_cast<int32_t>(batch.rows.size()));
    const std::vector<SampledToken> tokens = tokens_for(batch, step);
    if (processor.has_overlapped_step()) processor.finish_overlap(overlap_tokens);
    scheduler.on_step_done(out);
    if (overlap && processor.can_overlap()) {
      processor.start_overlap();
      overlap_tokens = tokens;
      ++result.steps_overlapped;
    } else {
      processor.apply(tokens);
    }
  }
  for (OutputRecord& record : processor.take_records()) {
    const uint64_t index = std::visit([](const auto& r) { return r.index; }, record);
    CHECK(result.records.emplace(index, std::move(record)).second);
  }
  return result;
}

const RequestOutput& output_of(const Run& r, uint64_t index) {
  REQUIRE(r.records.contains(index));
  REQUIRE(std::holds_alternative<RequestOutput>(r.records.at(index)));
  return std::get<RequestOutput>(r.records.at(index));
}

}  // namespace

TEST_CASE("each sample's tokens are its rows' ids in step order, and it ends by length at max_tokens") {
  // Request 0: a 5-token prompt, 3 tokens; request 1: a 2-token prompt, 1 token. Both
  // prompts fit the first step (64 tokens), so step 0 samples both (rows 0, 1), step 1 and
  // step 2 only request 0 (row 0).
  const Run r = run({request(0, {1, 2, 3, 4, 5}, 3), request(1, {7, 8}, 1)}, false);
  CHECK(r.rows_per_step == std::vector<int32_t>{2, 1, 1});
  const RequestOutput& first = output_of(r, 0);
  REQUIRE(first.choices.size() == 1);
  CHECK(first.choices[0].token_ids == std::vector<TokenId>{1000, 1100, 1200});
  CHECK(first.choices[0].num_tokens == 3);
  CHECK(first.choices[0].finish_reason == FinishReason::kLength);
  CHECK(first.prompt_tokens == 5);
  const RequestOutput& second = output_of(r, 1);
  CHECK(second.choices.at(0).token_ids == std::vector<TokenId>{1001});
  CHECK(second.prompt_tokens == 2);
}

TEST_CASE("n = 3: the prompt's logits start all three samples, one row each, then one row per sample per step") {
  const Run r = run({request(0, {1, 2, 3, 4, 5, 6}, 2, 3)}, false);
  CHECK(r.rows_per_step == std::vector<int32_t>{3, 3});
  const RequestOutput& out = output_of(r, 0);
  REQUIRE(out.choices.size() == 3);
  // Step 0's three rows read the prompt's one logits row: first the new samples 1 and 2,
  // then sample 0's own. Each sample's second token is its own row of step 1.
  const TokenId first_tokens[] = {1002, 1000, 1001};
  for (std::size_t k = 0; k < 3; ++k) {
    CAPTURE(k);
    CHECK(out.choices[k].token_ids.size() == 2);
    CHECK(out.choices[k].token_ids[0] == first_tokens[k]);
    CHECK(out.choices[k].token_ids[1] / 100 == 11);
  }
  std::vector<TokenId> seconds;
  for (const Completion& c : out.choices) seconds.push_back(c.token_ids[1]);
  std::ranges::sort(seconds);
  CHECK(seconds == std::vector<TokenId>{1100, 1101, 1102});
}

TEST_CASE("overlapped, the steps give the records of applying each step at once") {
  auto batch = [] {
    return std::vector<PreparedRequest>{request(0, {1, 2, 3, 4, 5}, 4), request(1, {1, 2, 3, 9}, 2), request(2, {6}, 6),
                                        request(3, {4, 4, 4, 4, 4, 4, 4, 4, 4}, 1)};
  };
  const Run plain = run(batch(), false);
  const Run overlapped = run(batch(), true);
  CHECK(plain.steps_overlapped == 0);
  CHECK(overlapped.steps_overlapped == static_cast<int32_t>(overlapped.rows_per_step.size()));
  CHECK(overlapped.rows_per_step == plain.rows_per_step);
  REQUIRE(overlapped.records.size() == 4);
  for (uint64_t index = 0; index < 4; ++index) {
    CAPTURE(index);
    const RequestOutput& a = output_of(plain, index);
    const RequestOutput& b = output_of(overlapped, index);
    REQUIRE(a.choices.size() == b.choices.size());
    CHECK(a.choices[0].token_ids == b.choices[0].token_ids);
    CHECK(a.choices[0].finish_reason == b.choices[0].finish_reason);
    CHECK(a.cached_tokens == b.cached_tokens);
  }
  CHECK(output_of(plain, 2).choices[0].token_ids.size() == 6);
}

TEST_CASE("a row with no token fails its request with one error record; the other request completes") {
  // Step 1, row 0 (request 0's second token) has no id: unusable logits.
  const TokenRule no_token_at_step_1_row_0 = [](int32_t step, int32_t row) -> std::optional<TokenId> {
    if (step == 1 && row == 0) return std::nullopt;
    return 1000 + 100 * step + row;
  };
  for (bool overlap : {false, true}) {
    CAPTURE(overlap);
    const Run r = run({request(0, {1, 2, 3}, 4), request(1, {5, 6}, 3)}, overlap, no_token_at_step_1_row_0);
    REQUIRE(r.records.size() == 2);
    REQUIRE(std::holds_alternative<RequestError>(r.records.at(0)));
    CHECK(std::get<RequestError>(r.records.at(0)).code == "numerical_error");
    CHECK(output_of(r, 1).choices.at(0).token_ids.size() == 3);
  }
}
