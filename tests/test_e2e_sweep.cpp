// `pagedgen sweep` end to end: one row per block size, the outputs checked identical, and
// the figures consistent with what each size must give (same tokens generated and
// computed; blocks of size 1 hold exactly their tokens, so utilization 1).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <fstream>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "test_paths.h"

using namespace pagedgen::test;

TEST_CASE("sweep runs every block size with one model load and finds the outputs identical") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  TempDir dir("pagedgen-sweep");
  const auto input = dir / "in.jsonl";
  std::ofstream(input) << "{\"id\": \"a\", \"prompt\": \"The three primary colors are red, yellow and blue. The three "
                          "secondary colors are\"}\n"
                       << "{\"id\": \"b\", \"prompt\": \"The three primary colors are red, yellow and blue. Mixing red "
                          "and blue gives\"}\n"
                       << "{\"id\": \"c\", \"prompt\": \"A haiku about autumn:\", \"temperature\": 0.8, \"n\": 2}\n"
                       << "not json\n";
  const auto outputs = dir / "outputs";
  const auto table = dir / "table.json";
  const CliResult r = run_pagedgen(fmt::format("sweep -q -i '{}' --block-sizes 1,8,16,64 --max-tokens 10 "
                                               "--temperature 0 --seed 7 --format json --outputs '{}'",
                                               input.string(), outputs.string()),
                                   dir / "stderr.txt", table);
  CHECK_MESSAGE(r.exit_code == 1, r.stderr_text);  // the "not json" line failed; the rest ran
  simdjson::ondemand::parser parser;
  const simdjson::padded_string json = simdjson::padded_string::load(table.string());
  simdjson::ondemand::document doc = parser.iterate(json);
  CHECK(bool(doc["outputs_identical"]));
  std::vector<int64_t> sizes, generated, computed;
  std::vector<double> utilization;
  for (simdjson::ondemand::object row : doc["block_sizes"]) {
    sizes.push_back(int64_t(row["block_size"]));
    generated.push_back(int64_t(row["generated"]));
    computed.push_back(int64_t(row["prompt_computed"]));
    utilization.push_back(double(row["utilization"]));
  }
  CHECK(sizes == std::vector<int64_t>{1, 8, 16, 64});
  CHECK(generated == std::vector<int64_t>(4, 40));  // a, b and 2 samples of c, 10 tokens each
  CHECK(utilization[0] == 1.0);
  for (std::size_t i = 1; i < utilization.size(); ++i) CHECK(utilization[i] < utilization[i - 1]);
  // The output files, one per size, are the same bytes (this input has no cached tokens
  // that differ: a and b share 11 tokens, which only block size 1 and 8 could reuse).
  const std::string bs16 = read_file(outputs / "bs16.jsonl");
  CHECK(std::count(bs16.begin(), bs16.end(), '\n') == 4);
  CHECK(bs16.find("\"error\":{\"code\":\"invalid_json\"") != std::string::npos);
}
