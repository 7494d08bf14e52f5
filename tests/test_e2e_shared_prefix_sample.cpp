// The shared-prefix sample (samples/shared_prefix.jsonl) end to end: the prompt tokens the
// engine computed equal the distinct prompt tokens, counted here independently of the
// planner's trie, and at block size 16 at least 98% of the allocated KV slots hold a token.
//
// The sample: 12 chat requests, 6 questions on each of two license texts (Apache-2.0 and
// MPL-2.0, as Debian ships them) carried in the system message, greedy, 64 new tokens.
// Worked out from the tokenized prompts, sorted (each one adds what it does not share with
// the one before it; two requests of different groups share the first 13 tokens):
//   MPL-2.0     lengths 3701 3706 3709 3708 3709 3710   common prefix  -  3691 3690 3689 3689 3689
//   Apache-2.0  lengths 2249 2253 2251 2247 2257 2253   common prefix 13 2235 2234 2234 2234 2234
//   total    = 22243 + 13510                                     = 35753
//   distinct = 35753 - (18448 + 13 + 2235 + 4 * 2234 = 29632)    = 6121
// The engine computes exactly the distinct tokens: each request after the first of its
// group shares the full blocks of the common prefix and copies the rest of it from the
// earlier request's block (that request's prompt fills it), so 29632 tokens come from the
// cache and 6121 are computed.
//
// Every request of the sample generates its 64 tokens, so `pagedgen plan` (the scheduler
// without a model, every sample at max_tokens) must predict this run's KV figures exactly.
#include <doctest/doctest.h>
#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>
#include <numeric>
#include <sstream>

#include "cli_runner.h"
#include "job/prompt_builder.h"
#include "io/request_reader.h"
#include "loader/model_files.h"
#include "test_paths.h"
#include "model_chat_template.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

// The token ids of every request of the sample, through the model's chat template.
std::vector<std::vector<TokenId>> tokenize_sample(const ModelFiles& files, const std::filesystem::path& input) {
  const Tokenizer& tokenizer = files.tokenizer();
  const PromptBuilder builder(tokenizer, test::model_chat_template(*files.chat_template_text(), tokenizer), "",
                              files.config().context_length);
  std::istringstream lines(read_file(input));
  RequestReader reader(lines, SamplingParams{});
  std::vector<std::vector<TokenId>> prompts;
  while (std::optional<RequestItem> item = reader.next()) {
    REQUIRE(std::holds_alternative<Request>(*item));
    auto built = builder.build(std::get<Request>(*item));
    REQUIRE(std::holds_alternative<PreparedRequest>(built));
    prompts.push_back(std::get<PreparedRequest>(built).prompt_ids);
  }
  return prompts;
}

int64_t common_prefix(const std::vector<TokenId>& a, const std::vector<TokenId>& b) {
  return std::ranges::mismatch(a, b).in1 - a.begin();
}

}  // namespace

TEST_CASE("shared-prefix sample: prompt tokens computed = distinct prompt tokens; 98% of slots hold a token") {
  const auto model = default_model();
  if (!model) {
    MESSAGE("skipped: the default model is not installed (scripts/fetch-model.sh)");
    return;
  }
  const std::filesystem::path input = source_dir() / "samples" / "shared_prefix.jsonl";
  const ModelFiles files(*model);
  std::vector<std::vector<TokenId>> prompts = tokenize_sample(files, input);
  REQUIRE(prompts.size() == 12);

  std::ranges::sort(prompts);
  std::vector<int64_t> lengths, common;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    lengths.push_back(std::ssize(prompts[i]));
    common.push_back(i == 0 ? 0 : common_prefix(prompts[i - 1], prompts[i]));
  }
  CHECK(lengths == std::vector<int64_t>{3701, 3706, 3709, 3708, 3709, 3710, 2249, 2253, 2251, 2247, 2257, 2253});
  CHECK(common == std::vector<int64_t>{0, 3691, 3690, 3689, 3689, 3689, 13, 2235, 2234, 2234, 2234, 2234});
  const int64_t total = 35753;
  const int64_t distinct = 6121;
  CHECK(std::accumulate(lengths.begin(), lengths.end(), int64_t{0}) == total);
  CHECK(total - std::accumulate(common.begin(), common.end(), int64_t{0}) == distinct);

  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "pagedgen_test_shared_prefix_sample";
  std::filesystem::create_directories(dir);
  const CliResult r =
      run_pagedgen(fmt::format("generate -q --ignore-eos -i '{}' -o '{}' --stats '{}' --block-size 16", input.string(),
                               (dir / "out.jsonl").string(), (dir / "stats.json").string()),
                   dir / "stderr.txt");
  REQUIRE_MESSAGE(r.exit_code == 0, r.stderr_text);
  simdjson::ondemand::parser parser;
  const simdjson::padded_string json = simdjson::padded_string::load((dir / "stats.json").string());
  simdjson::ondemand::document stats = parser.iterate(json);
  const auto figure = [&](const char* object, const char* key) { return int64_t(stats[object][key]); };
  CHECK(figure("tokens", "prompt") == total);
  CHECK(figure("tokens", "distinct_prompt") == distinct);
  CHECK(figure("tokens", "prefix_groups") == 2);
  const int64_t computed = figure("tokens", "prompt_computed");
  CHECK(computed <= distinct + 2 * 16);  // the acceptance bound: one block per group
  CHECK(computed == distinct);           // what the partial-block copies achieve here
  CHECK(figure("tokens", "prompt_cached") == total - computed);
  const double utilization = double(stats["slots"]["utilization"]);
  MESSAGE(fmt::format("utilization {:.4f}", utilization));
  CHECK(utilization >= 0.98);
  const int64_t peak_allocated = figure("slots", "peak_allocated");
  CHECK(figure("naive_reservation", "peak_request_slots") > peak_allocated);
  CHECK(figure("naive_reservation", "peak_max_model_len_slots") > figure("naive_reservation", "peak_request_slots"));

  // The plan of the same input at block size 16: the same engine loop on a backend that
  // computes nothing, so with every sample running to max_tokens (--ignore-eos, no stop
  // strings) its figures are the real run's.
  REQUIRE(figure("tokens", "generated") == 12 * 64);
  const CliResult p = run_pagedgen(
      fmt::format("plan -i '{}' --block-sizes 16 --json '{}'", input.string(), (dir / "plan.json").string()),
      dir / "plan-stderr.txt");
  REQUIRE_MESSAGE(p.exit_code == 0, p.stderr_text);
  simdjson::ondemand::parser plan_parser;
  const simdjson::padded_string plan_json = simdjson::padded_string::load((dir / "plan.json").string());
  simdjson::ondemand::document plan = plan_parser.iterate(plan_json);
  CHECK(int64_t(plan["prompt_tokens"]) == total);
  CHECK(int64_t(plan["distinct_prompt_tokens"]) == distinct);
  simdjson::ondemand::object row = plan["block_sizes"].at(0).get_object();
  CHECK(int64_t(row["peak_blocks"]) == figure("blocks", "peak_used"));
  CHECK(int64_t(row["prompt_computed"]) == computed);
  CHECK(int64_t(row["generated"]) == 12 * 64);
  CHECK(double(row["utilization"]) == doctest::Approx(utilization).epsilon(1e-5));
  CHECK(int64_t(row["steps"]) == figure("blocks", "steps"));
}
