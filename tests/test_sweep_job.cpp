// The sweep job (job/sweep_job.h) without a model: a backend whose token ids are a function
// of each row's input token and position (position_hash_backend.h: so no output can change
// with the block size) runs a small input at three block sizes.
// Checked: one row per size in order, each reported as it is done; the output lines in
// input order with the bad line's error record; the job's figures from the input; the
// engine's, which must agree between sizes where the block size cannot matter; and a
// backend that fails one request's row at one block size, whose line alone is reported.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "job/sweep_job.h"
#include "position_hash_backend.h"

using namespace pagedgen;
using pagedgen::test::PositionHashBackend;

namespace {

PreparedRequest sweep_request(uint64_t index, std::vector<TokenId> prompt, int32_t max_tokens) {
  PreparedRequest r;
  r.index = index;
  r.id_json = fmt::format("\"r{}\"", index);
  r.prompt_ids = std::move(prompt);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  return r;
}

// Input lines: 0 and 2 are requests, 1 a bad line, 3 blank. Line 2's prompt ends with 1001.
LoadedInput small_input() {
  LoadedInput input;
  input.requests = {sweep_request(0, {5, 6, 7, 8, 9}, 6), sweep_request(2, {11, 12, 13, 1001}, 3)};
  input.errors = {RequestError{1, std::nullopt, "invalid_json", "not JSON"}};
  input.indices = {0, 1, 2};
  input.num_lines = 4;
  input.num_blank_lines = 1;
  return input;
}

SweepSettings settings_of(std::vector<int32_t> block_sizes) {
  SweepSettings settings;
  settings.block_sizes = std::move(block_sizes);
  settings.engine.max_model_len = 64;
  settings.pool_budget.num_blocks = 64;
  settings.job.model = "test-model";
  return settings;
}

}  // namespace

TEST_CASE("a sweep runs each block size in order and finds the outputs the same") {
  PositionHashBackend backend;
  std::vector<int32_t> reported;
  const SweepResult result = sweep_block_sizes(settings_of({1, 4, 16}), small_input(), backend, nullptr,
                                               [&](const SweepRow& row) { reported.push_back(row.block_size); });
  CHECK(reported == std::vector<int32_t>{1, 4, 16});
  REQUIRE(result.rows.size() == 3);
  CHECK(result.outputs_identical());
  CHECK(result.any_failed());  // line 1's error record
  for (const SweepRow& row : result.rows) {
    CAPTURE(row.block_size);
    REQUIRE(row.lines.size() == 3);
    CHECK(row.lines == result.rows.front().lines);
    CHECK(row.lines[0].find("\"id\":\"r0\"") != std::string::npos);
    CHECK(row.lines[1].find("\"code\":\"invalid_json\"") != std::string::npos);
    CHECK(row.lines[2].find("\"id\":\"r2\"") != std::string::npos);
    const JobStats& job = row.stats.job;
    CHECK(job.model == "test-model");
    CHECK(job.num_lines == 4);
    CHECK(job.num_blank_lines == 1);
    CHECK(job.num_requests == 3);
    CHECK(job.num_failed_lines == 1);
    const EngineStats& engine = row.stats.engine;
    CHECK(engine.block_size == row.block_size);
    CHECK(engine.num_pool_blocks == 64);
    CHECK(engine.num_generated_tokens == 6 + 3);
    CHECK(engine.num_prompt_tokens == 5 + 4);
    CHECK(engine.num_computed_prompt_tokens == 5 + 4);  // the prompts share no token
  }
  // Blocks of one token hold exactly their tokens; larger blocks leave slots empty.
  CHECK(result.rows[0].stats.engine.utilization() == 1.0);
  CHECK(result.rows[1].stats.engine.utilization() < 1.0);
  CHECK(result.rows[2].stats.engine.utilization() < result.rows[1].stats.engine.utilization());
}

TEST_CASE("a sweep names the input lines whose output differs at some block size") {
  // Line 2's prompt ends with 1001: at block size 4 its first sample fails.
  PositionHashBackend backend(4, 1001);
  const SweepResult result = sweep_block_sizes(settings_of({1, 4, 16}), small_input(), backend, nullptr);
  REQUIRE(result.rows.size() == 3);
  CHECK_FALSE(result.outputs_identical());
  CHECK(result.differing_lines == std::vector<uint64_t>{2});
  CHECK(result.rows[1].lines[2].find("\"error\"") != std::string::npos);
  CHECK(result.rows[1].lines[0] == result.rows[0].lines[0]);
  CHECK(result.rows[1].stats.engine.num_rejected_requests == 1);
  CHECK(result.rows[2].lines == result.rows[0].lines);
}
