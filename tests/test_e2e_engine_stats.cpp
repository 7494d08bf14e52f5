// The run stats on a workload worked out by hand: block size 4, one sequence at a time,
// two prefix groups, greedy, exactly 2 new tokens per request.
//
//   A1 = PA(10) + 2   A2 = PA + 3   A3 = PA + 1      PA = 100..109
//   B1 = PB(8) + 3    B2 = PB + 1                     PB = 300..307
//   C  = 6 tokens of its own
//
// Prefill computed (a request reuses the tokens it shares with the one before it, never
// its last token: full blocks shared, the rest copied from the earlier block):
//   A1 12, A2 13-10 = 3, A3 11-10 = 1, B1 11, B2 9-8 = 1, C 6 -> 34
// Distinct prompt tokens (trie nodes): 10+2+3+1 + 8+3+1 + 6 = 34: the same. A2 and A3 copy
// the tail of PA (108 109) from A1's third block [108 109 200 201] (partial hits); B2 needs
// none (PB fills its blocks), and its last token is never served.
//
// Each request takes two steps (prefill + first token, then the second token). Slots in use
// during each step (allocated = blocks x 4 / holding a token):
//   A1 12/12 16/13   A2 16/13 16/14   A3 12/11 12/12   B1 12/11 12/12   B2 12/9 12/10   C 8/6 8/7
//   sums: allocated 148, holding 130; peak 4 blocks.
#include <doctest/doctest.h>

#include "cpu/cpu_backend.h"
#include "engine/engine.h"
#include "engine/run_to_completion.h"
#include "loader/model_files.h"
#include "test_paths.h"
#include "token_lists.h"

using namespace pagedgen;
using pagedgen::test::concat;
using pagedgen::test::iota_tokens;

namespace {}  // namespace

TEST_CASE("stats of a hand-worked two-group workload") {
  const auto model = test::default_model();
  if (!model) {
    MESSAGE("skipped: the default model is not installed (scripts/fetch-model.sh)");
    return;
  }
  const ModelFiles files(*model);
  const ModelWeights weights = files.load_weights();
  CpuBackend backend(files.config(), weights);

  const auto pa = iota_tokens(100, 10);
  const auto pb = iota_tokens(300, 8);
  const std::vector<std::vector<TokenId>> prompts = {concat(pa, {200, 201}), concat(pa, {210, 211, 212}),
                                                     concat(pa, {220}),      concat(pb, {400, 401, 402}),
                                                     concat(pb, {410}),      iota_tokens(500, 6)};
  std::vector<PreparedRequest> requests;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    PreparedRequest r;
    r.index = i;
    r.seed_key = std::to_string(i);
    r.prompt_ids = prompts[i];
    r.sampling.temperature = 0;
    r.sampling.max_tokens = 2;
    r.sampling.ignore_eos = true;
    requests.push_back(r);
  }

  EngineConfig config;
  config.block_size = 4;
  config.num_blocks = 64;
  config.max_num_seqs = 1;
  config.max_model_len = 8192;
  Engine engine(config, backend, &files.tokenizer());
  int num_done = 0;
  engine.add_requests(requests);
  for (const OutputRecord& record : run_to_completion(engine)) {
    REQUIRE(std::holds_alternative<RequestOutput>(record));
    CHECK(std::get<RequestOutput>(record).choices.at(0).num_tokens == 2);
    ++num_done;
  }
  CHECK(num_done == 6);

  const EngineStats& s = engine.stats();
  CHECK(s.num_prompt_tokens == 62);
  CHECK(s.num_distinct_prompt_tokens == 34);
  CHECK(s.num_computed_prompt_tokens == 34);
  CHECK(s.num_computed_prompt_tokens == s.num_distinct_prompt_tokens);
  CHECK(s.prefix_hit_blocks == 6);
  CHECK(s.prefix_partial_hits == 2);
  CHECK(s.prefix_partial_tokens == 4);
  CHECK(s.prefix_hit_tokens == 24 + 4);
  CHECK(s.prefix_lookup_blocks == 12);  // (len - 1) / 4 per request: 2+3+2+2+2+1
  CHECK(s.num_prefix_groups == 2);
  CHECK(s.num_generated_tokens == 12);
  CHECK(s.num_steps == 12);
  CHECK(s.peak_used_blocks == 4);
  CHECK(s.sum_used_blocks == 37);
  CHECK(s.sum_allocated_slots == 148);
  CHECK(s.sum_filled_slots == 130);
  CHECK(s.sum_logical_slots == 130);  // one sequence at a time: nothing shared at once
  CHECK(s.sum_sequence_slots == 148);
  CHECK(s.sum_naive_max_len_slots == 12 * 8192);
  CHECK(s.sum_naive_request_slots == 2 * (14 + 15 + 13 + 13 + 11 + 8));
  CHECK(s.cow_copies == 0);
  CHECK(s.preemptions == 0);
}
