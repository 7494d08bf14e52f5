// The plan job (job/plan_job.h) on a dry-run sizing backend of 10 KV bytes per token, with a
// pool of 3 blocks at every block size, worked out by hand:
//   request 0: 5 prompt tokens, max_tokens 3; request 1: 12 prompt tokens, max_tokens 1.
//   block size 4:  request 1 needs ceil((12 + 1) / 4) = 4 blocks for its prompt and the next
//                  token: more than the pool, rejected; request 0 runs alone in 2 blocks.
//   block size 16: both fit in one block each, both run at once: peak 2 blocks.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "backend/dry_run_backend.h"
#include "job/plan_job.h"
#include "step/kv_kinds.h"

using namespace pagedgen;

namespace {

PreparedRequest plan_request(uint64_t index, int32_t first_token, int32_t num_prompt_tokens, int32_t max_tokens) {
  PreparedRequest r;
  r.index = index;
  r.id_json = fmt::format("\"r{}\"", index);
  for (int32_t i = 0; i < num_prompt_tokens; ++i) r.prompt_ids.push_back(first_token + i);
  r.sampling.max_tokens = max_tokens;
  return r;
}

}  // namespace

TEST_CASE("a plan runs every block size on a dry run and lists the requests that cannot fit") {
  const KvKind kinds[] = {{0, 2}};
  const DryRunBackend sizing(10, kinds);
  LoadedInput input;
  input.requests = {plan_request(0, 100, 5, 3), plan_request(1, 200, 12, 1)};
  input.indices = {0, 1};
  input.num_lines = 2;
  PlanSettings settings;
  settings.block_sizes = {4, 16};
  settings.engine.max_model_len = 64;
  settings.pool_budget.num_blocks = 3;

  const PlanResult plan = plan_block_sizes(settings, input, sizing);
  CHECK(plan.kv_bytes_per_token == 10);
  CHECK_FALSE(plan.all_requests_fit());
  REQUIRE(plan.rows.size() == 2);

  const PlanRow& small = plan.rows[0];
  CHECK(small.block_size == 4);
  CHECK(small.kv_bytes_per_block == 40);
  CHECK(small.stats.num_pool_blocks == 3);
  REQUIRE(small.rejected.size() == 1);
  CHECK(small.rejected[0].index == 1);
  CHECK(small.rejected[0].id_json == "\"r1\"");
  CHECK(small.rejected[0].message.find("the pool has 3") != std::string::npos);
  CHECK(small.stats.num_prompt_tokens == 5);
  CHECK(small.stats.num_generated_tokens == 3);  // the dry run generates max_tokens
  CHECK(small.stats.peak_used_blocks == 2);
  CHECK(small.stats.preemptions == 0);
  CHECK_FALSE(small.fits());

  const PlanRow& large = plan.rows[1];
  CHECK(large.block_size == 16);
  CHECK(large.kv_bytes_per_block == 160);
  CHECK(large.rejected.empty());
  CHECK(large.stats.num_prompt_tokens == 5 + 12);
  CHECK(large.stats.num_generated_tokens == 3 + 1);
  CHECK(large.stats.peak_used_blocks == 2);
  CHECK(large.stats.peak_kv_bytes == 2 * 160);
  CHECK(large.fits());
}
