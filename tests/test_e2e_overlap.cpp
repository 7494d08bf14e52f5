// `pagedgen generate --no-overlap` against the default (the overlap on) on the CPU backend
// and the default model: the same output file byte for byte and the same stats JSON but
// for its time and throughput figures, over a workload with shared prefixes (full-block
// hits and copy-on-write), n > 1 with seeds, stop strings and stop ids, max_tokens and
// min_tokens, ignore_eos lines (whose steps are overlapped), structured outputs
// (json_object and json_schema lines, whose steps wait for their ids), penalties (which
// read the sequence's tokens: their steps wait too), logprobs and logit_bias overlapped,
// at two block sizes
// and in a pool small enough to preempt. The engine-level checks of which steps are overlapped
// are test_engine_overlap's.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "test_paths.h"

using namespace pagedgen::test;

namespace {

const char* kOverlapInput =
    R"({"id": "a", "prompt": "Facts about the solar system, one per line. The Sun is a star at the center of the solar system. Mercury is", "temperature": 0, "ignore_eos": true}
{"id": "b", "prompt": "Facts about the solar system, one per line. The Sun is a star at the center of the solar system. Venus is", "temperature": 0.9, "n": 3, "ignore_eos": true, "max_tokens": 9}
{"id": "c", "prompt": "Facts about the solar system, one per line. The Sun is a star at the center of the solar system. Mars", "temperature": 0.8, "seed": 3, "stop": [" the", "."]}
{"id": "d", "prompt": "Write a short poem about rain:", "temperature": 1.0, "top_p": 0.9, "n": 2, "stop_token_ids": [13, 198], "min_tokens": 3}
{"id": "e", "prompt": "Write a short poem about rain:", "temperature": 0, "max_tokens": 1}
{"id": "f", "prompt": "Count: one, two, three,", "temperature": 0, "min_tokens": 4, "max_tokens": 7}
{"id": "g", "prompt": "Describe a cat as JSON:", "temperature": 0.7, "seed": 9, "response_format": {"type": "json_object"}}
{"id": "h", "prompt": "A person as JSON:", "temperature": 0, "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["name", "age"], "additionalProperties": false}}}}
{"id": "i", "prompt": "Facts about the solar system, one per line. The Sun is", "temperature": 0, "ignore_eos": true, "max_tokens": 14}
{"id": "j", "prompt": "Facts about the solar system, one per line. The Sun is", "temperature": 0, "ignore_eos": true, "max_tokens": 12, "presence_penalty": 1.5, "frequency_penalty": 0.5, "repetition_penalty": 1.3}
{"id": "k", "prompt": "Count: one, two, three,", "temperature": 0.6, "seed": 4, "ignore_eos": true, "max_tokens": 10, "logprobs": 3, "logit_bias": {"11": -100}}
)";

}  // namespace

TEST_CASE("the same output and stats with the overlap on and off") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  TempDir dir("pagedgen-overlap");
  const auto input = dir / "in.jsonl";
  std::ofstream(input) << kOverlapInput;
  const auto run = [&](const std::string& name, const std::string& flags) {
    const GenerateRun r = run_generate(dir.path(), input, name, flags);
    return std::pair{r.output, read_file(r.stats)};
  };
  for (const char* flags : {"--block-size 16", "--block-size 4 --num-blocks 20 --max-num-seqs 6"}) {
    CAPTURE(flags);
    const auto [on_out, on_stats] = run("on", flags);
    const auto [off_out, off_stats] = run("off", std::string(flags) + " --no-overlap");
    CHECK(std::count(on_out.begin(), on_out.end(), '\n') == 11);
    CHECK(on_out.find("\"error\"") == std::string::npos);
    CHECK(on_out == off_out);
    CHECK(stats_without_timings(on_stats) == stats_without_timings(off_stats));
    // The workload does what it says: shared blocks, copies, and (in the small pool) preemption.
    CHECK(json_int(on_stats, "prefix_cache", "hit_blocks") > 0);
    CHECK(json_int(on_stats, "copy_on_write", "copies") > 0);
    if (std::string(flags).find("num-blocks") != std::string::npos)
      CHECK(json_int(on_stats, "preemption", "preemptions") > 0);
    // The time figures were removed, and nothing else.
    CHECK(stats_without_timings(on_stats).find("time_seconds") == std::string::npos);
    CHECK(stats_without_timings(on_stats).find("\"copy_on_write\"") != std::string::npos);
  }
}
