// `pagedgen generate` end to end: the same input gives the same output file at every block
// size, with prefix sharing off, under preemption, on 1 or 2 threads and on every
// instruction set of the fast path (the default), for greedy and seeded sampling (n > 1
// included); and a file of bad lines gives exactly one line per non-blank line.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <fstream>

#include "cli_runner.h"
#include "cpu/cpu_isa.h"
#include "gguf_writer.h"
#include "test_paths.h"

using namespace pagedgen::test;

namespace {

// Requests sharing a ~45-token prefix, greedy and sampled (derived and explicit seeds, n=3).
const char* kSolarSystemInput =
    R"({"id": "g1", "prompt": "Facts about the solar system, one per line. The Sun is a star at the center of the solar system. Mercury is the closest planet to the Sun. Venus is", "temperature": 0}
{"id": "g2", "prompt": "Facts about the solar system, one per line. The Sun is a star at the center of the solar system. Mercury is the closest planet to the Sun. Mars is", "temperature": 0}
{"id": "s1", "prompt": "Facts about the solar system, one per line. The Sun is a star at the center of the solar system. Mercury is the closest planet to the Sun. Jupiter is", "temperature": 0.9}
{"id": "s2", "prompt": "Facts about the solar system, one per line. The Sun is a star at the center of the solar system. Earth", "temperature": 1.0, "top_p": 0.9, "n": 3}
{"id": "s3", "prompt": "Write a short poem about rain:", "temperature": 0.8, "seed": 11, "n": 2}
{"id": "g3", "prompt": "Write a short poem about rain:", "temperature": 0}
)";

}  // namespace

TEST_CASE("output files are identical across block sizes, sharing off and preemption") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  TempDir dir("pagedgen-determinism");
  const auto input = dir / "in.jsonl";
  std::ofstream(input) << kSolarSystemInput;
  const auto run = [&](const std::string& name, const std::string& flags) {
    const GenerateRun r = run_generate(dir.path(), input, name, flags);
    return std::pair{r.output, r.stats};
  };

  const auto [baseline, baseline_stats] = run("bs16", "--block-size 16");
  CHECK(std::count(baseline.begin(), baseline.end(), '\n') == 6);
  CHECK(json_file_int(baseline_stats, "prefix_cache", "hit_blocks") > 0);
  CHECK(json_file_int(baseline_stats, "copy_on_write", "copies") > 0);
  MESSAGE("baseline output:\n" << baseline);
  for (int block_size : {1, 8, 32, 64}) {
    const auto [text, stats] = run(fmt::format("bs{}", block_size), fmt::format("--block-size {}", block_size));
    CAPTURE(block_size);
    CHECK(without_cached_tokens(text) == without_cached_tokens(baseline));
  }
  // The fast path (the default) on one thread and on every instruction set this CPU has.
  CHECK(without_cached_tokens(run("threads1", "--threads 1").first) == without_cached_tokens(baseline));
  for (pagedgen::cpu::CpuIsa isa : pagedgen::cpu::supported_cpu_isas()) {
    const std::string name = pagedgen::cpu::cpu_isa_name(isa);
    CAPTURE(name);
    CHECK(without_cached_tokens(run("isa-" + name, "--cpu-isa " + name).first) == without_cached_tokens(baseline));
  }
  const auto [unshared, unshared_stats] = run("noshare", "--no-prefix-sharing");
  CHECK(json_file_int(unshared_stats, "prefix_cache", "hit_blocks") == 0);
  CHECK(without_cached_tokens(unshared) == without_cached_tokens(baseline));
  // 6 blocks of 8 slots hold at most two of these sequences at once: the rest wait or are
  // preempted and recomputed.
  const auto [tight, tight_stats] = run("tiny-pool", "--block-size 8 --num-blocks 12");
  const int64_t preemptions = json_file_int(tight_stats, "preemption", "preemptions");
  MESSAGE("preemptions with a 12-block pool: " << preemptions);
  CHECK(preemptions > 0);
  CHECK(without_cached_tokens(tight) == without_cached_tokens(baseline));
}

TEST_CASE("bad lines become error lines; every non-blank line gets exactly one output line") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  TempDir dir("pagedgen-bad-lines");
  const auto input = dir / "in.jsonl";
  std::string too_long = "{\"id\": \"long\", \"prompt\": \"";
  for (int i = 0; i < 9000; ++i) too_long += "word ";  // > 8192 tokens, the model's context
  too_long += "\"}\n";
  std::ofstream(input) << "{\"id\": \"ok1\", \"prompt\": \"Hello\", \"max_tokens\": 3}\n"
                       << "{\"id\": \"broken\", \"prompt\": \n"                                 // malformed JSON
                       << "\n"                                                                  // blank
                       << "{\"id\": \"nothing\"}\n"                                             // no prompt
                       << "   \n"                                                               // blank
                       << "{\"id\": \"typed\", \"prompt\": \"Hi\", \"max_tokens\": \"ten\"}\n"  // wrong type
                       << "{\"id\": \"range\", \"prompt\": \"Hi\", \"temperature\": -1}\n"      // out of range
                       << too_long
                       << "{\"id\": 7, \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 3}\n";
  const auto out = dir / "out.jsonl";
  const CliResult r =
      run_pagedgen(fmt::format("generate -q -i '{}' -o '{}'", input.string(), out.string()), dir / "stderr.txt");
  INFO(r.stderr_text);
  CHECK(r.exit_code == 1);  // finished, some lines failed
  const std::string text = read_file(out);
  MESSAGE("output:\n" << text);
  simdjson::dom::parser parser;
  std::vector<std::pair<uint64_t, std::string>> lines;  // index, error code ("" for success)
  std::size_t begin = 0;
  for (std::size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
    simdjson::dom::element line = parser.parse(text.substr(begin, end - begin));
    std::string_view code;
    if (line["error"]["code"].get(code) != simdjson::SUCCESS) code = "";
    lines.emplace_back(uint64_t(line["index"]), std::string(code));
  }
  const std::vector<std::pair<uint64_t, std::string>> expected = {{0, ""},
                                                                  {1, "invalid_json"},
                                                                  {3, "missing_field"},
                                                                  {5, "invalid_type"},
                                                                  {6, "invalid_value"},
                                                                  {7, "prompt_too_long"},
                                                                  {8, ""}};
  CHECK(lines == expected);
}

TEST_CASE("--device names a GPU by index; one that is not there is a clear fatal error") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  TempDir dir("pagedgen-device");
  const auto input = dir / "in.jsonl";
  std::ofstream(input) << "{\"prompt\": \"Hi\", \"max_tokens\": 2}\n";
  const auto args = [&](const std::string& device) {
    return fmt::format("generate -q -i '{}' -o '{}' --device {}", input.string(), (dir / "out.jsonl").string(), device);
  };
  const CliResult missing = run_pagedgen(args("cuda:7"), dir / "stderr.txt");  // the tests hide every GPU
  CHECK(missing.exit_code == 3);
  CHECK(missing.stderr_text.starts_with("pagedgen: error: --device cuda:7, but "));
  const CliResult malformed = run_pagedgen(args("gpu1"), dir / "stderr.txt");
  CHECK(malformed.exit_code == 2);
  CHECK(malformed.stderr_text.find("must be auto, cpu, cuda or cuda:N") != std::string::npos);
  const CliResult cpu = run_pagedgen(args("cpu"), dir / "stderr.txt");
  CHECK(cpu.exit_code == 0);
  CHECK(read_file(dir / "out.jsonl").find("\"finish_reason\":\"length\"") != std::string::npos);
}
