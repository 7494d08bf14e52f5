// `pagedgen plan` on small inputs worked out by hand: the invalid lines, the requests that
// can never fit in the pool, and the exit code, without loading any weights.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "test_paths.h"

using namespace pagedgen::test;

TEST_CASE("plan lists invalid lines and the requests that cannot fit, and exits with 1") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  TempDir dir("pagedgen-plan");
  const auto input = dir / "in.jsonl";
  std::string long_prompt;
  for (int i = 0; i < 40; ++i) long_prompt += " word";
  std::ofstream(input) << "{\"id\": \"short\", \"prompt\": \"Hello\", \"max_tokens\": 4}\n"
                       << "\n"
                       << "{\"id\": \"bad\", \"prompt\": 5}\n"
                       << "{\"id\": \"long\", \"prompt\": \"" << long_prompt << "\", \"max_tokens\": 4}\n";
  // 4 blocks of 8 slots: "Hello" (1 token) fits; 40 words (40 tokens) need 6 blocks.
  const auto json = dir / "plan.json";
  const CliResult r = run_pagedgen(
      fmt::format("plan -i '{}' --block-sizes 8 --num-blocks 4 --json '{}'", input.string(), json.string()),
      dir / "stderr.txt");
  CHECK(r.exit_code == 1);
  CHECK(r.stderr_text.find("no weights loaded") != std::string::npos);
  const std::string text = read_file(json);
  MESSAGE(text);
  CHECK(text.find("\"lines\": 4, \"blank_lines\": 1, \"requests\": 3, \"invalid_requests\": 1") != std::string::npos);
  CHECK(text.find("{\"index\": 2, \"id\": \"bad\", \"code\": \"invalid_type\"") != std::string::npos);
  CHECK(text.find("\"prompt_tokens\": 1,") != std::string::npos);  // the long one cannot run
  CHECK(text.find("\"cannot_fit\": [{\"index\": 3, \"id\": \"long\", \"reason\": \"the sequence needs 6 KV blocks") !=
        std::string::npos);
  CHECK(text.find("\"fits_without_preemption\": false") != std::string::npos);
  // "Hello" alone: 1 prompt token + 4 generated, the last one never stored: 4 slots, 1 block.
  CHECK(text.find("\"peak_blocks\": 1,") != std::string::npos);
  CHECK(text.find("\"generated\": 4,") != std::string::npos);
}

TEST_CASE("plan --json -: standard output holds the JSON alone, the table goes to stderr") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  TempDir dir("pagedgen-plan-stdout");
  const auto input = dir / "in.jsonl";
  std::ofstream(input) << "{\"id\": \"short\", \"prompt\": \"Hello\", \"max_tokens\": 4}\n";
  const CliResult r = run_pagedgen(fmt::format("plan -i '{}' --block-sizes 8 --json -", input.string()),
                                   dir / "stderr.txt", dir / "stdout.json");
  CHECK(r.exit_code == 0);
  const std::string json = read_file(dir / "stdout.json");
  CHECK(json.starts_with("{"));
  CHECK(json.ends_with("}\n"));
  CHECK(json.find("\"fits_without_preemption\": true") != std::string::npos);
  CHECK(r.stderr_text.find("bytes/block") != std::string::npos);  // the table's header
}
