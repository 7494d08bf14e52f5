// Options are checked before any model loads: a bad value exits with 2 and one
// "pagedgen: error:" line naming the flag, and leaves no output or manifest behind; a KV
// pool larger than the machine's memory is refused up front.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "test_paths.h"

using namespace pagedgen;

namespace {

struct Dir {
  std::filesystem::path path = std::filesystem::temp_directory_path() / "pagedgen-cli-validation";
  Dir() {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
    std::ofstream(path / "in.jsonl") << "{\"prompt\": \"Hello\", \"max_tokens\": 2}\n";
  }
};

// Runs `generate` on a one-line input with extra flags.
test::CliResult generate(const Dir& dir, const std::string& flags) {
  return test::run_pagedgen(fmt::format("generate -q --device cpu -i '{}' -o '{}' {}", (dir.path / "in.jsonl").string(),
                                        (dir.path / "out.jsonl").string(), flags),
                            dir.path / "stderr.txt");
}

bool is_one_line(const std::string& text) { return std::count(text.begin(), text.end(), '\n') == 1; }

}  // namespace

TEST_CASE("bad option values: exit 2, one line naming the flag, nothing written") {
  const Dir dir;
  const std::pair<const char*, const char*> cases[] = {
      {"--max-tokens -1", "--max-tokens"},
      {"--block-size 0", "--block-size"},
      {"--threads -1", "--threads"},
      {"--threads 100000", "--threads"},
      {"--temperature -1", "--temperature"},
      {"--top-p 0", "--top-p"},
      {"-n 0", "-n"},
      {"--min-tokens 9 --max-tokens 3", "--min-tokens"},
      {"--kv-cache-memory lots", "--kv-cache-memory"},
      // Values CLI11 alone would take: a wrapped or saturated seed, NaN and infinite
      // intervals, a directory as the schema, a tokenizer that real weights would ignore.
      {"--seed -1", "--seed"},
      {"--seed 18446744073709551616", "--seed"},
      {"--fsync-interval nan", "--fsync-interval"},
      {"--progress-interval inf", "--progress-interval"},
      {"--json-schema /", "--json-schema"},
      {"--tokenizer in.jsonl", "--tokenizer"},
      {"--stats - --report -", "--stats - and --report -"}};
  for (const auto& [flags, flag] : cases) {
    CAPTURE(flags);
    const test::CliResult r = generate(dir, flags);
    CHECK(r.exit_code == 2);
    CHECK(r.stderr_text.starts_with("pagedgen: error: "));
    CHECK(r.stderr_text.find(flag) != std::string::npos);
    CHECK(is_one_line(r.stderr_text));
    CHECK_FALSE(std::filesystem::exists(dir.path / "out.jsonl"));
    CHECK_FALSE(std::filesystem::exists(dir.path / "out.jsonl.manifest.json"));
  }
}

TEST_CASE("sweep, plan and merge refuse a file named twice before anything is written (exit 2)") {
  const Dir dir;
  const std::string in = (dir.path / "in.jsonl").string();
  const std::string cases[] = {fmt::format("sweep -q -i '{}' --report '{}'", in, in),
                               fmt::format("sweep -q -i '{}' --outputs '{}' --block-sizes 16 --report '{}'", in,
                                           dir.path.string(), (dir.path / "bs16.jsonl").string()),
                               fmt::format("plan -i '{}' --json '{}'", in, in),
                               fmt::format("merge '{}' -o '{}'", in, in)};
  for (const std::string& command : cases) {
    CAPTURE(command);
    const test::CliResult r = test::run_pagedgen(command, dir.path / "stderr.txt");
    CHECK(r.exit_code == 2);
    CHECK(r.stderr_text.find("are one file") != std::string::npos);
    CHECK(is_one_line(r.stderr_text));
    CHECK(test::read_file(dir.path / "in.jsonl") == "{\"prompt\": \"Hello\", \"max_tokens\": 2}\n");
    CHECK_FALSE(std::filesystem::exists(dir.path / "bs16.jsonl"));
  }
}

TEST_CASE("a KV pool larger than the machine's memory is refused before it is allocated") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const Dir dir;
  for (const char* flags : {"--kv-cache-memory 64TiB", "--num-blocks 2000000000"}) {
    CAPTURE(flags);
    const test::CliResult r = generate(dir, flags);
    CHECK(r.exit_code == 3);
    CHECK(r.stderr_text.find("memory this machine has available") != std::string::npos);
    CHECK(r.stderr_text.find(std::string(flags).substr(0, std::string(flags).find(' '))) != std::string::npos);
  }
}

TEST_CASE("every command's --help opens with one short line; the details and exit codes follow the options") {
  const Dir dir;
  for (const char* command : {"generate", "plan", "sweep", "merge", "inspect", "tokenize", "complete"}) {
    CAPTURE(command);
    const std::filesystem::path help = dir.path / "help.txt";
    const test::CliResult r = test::run_pagedgen(fmt::format("{} --help", command), dir.path / "stderr.txt", help);
    CHECK(r.exit_code == 0);
    const std::string text = test::read_file(help);
    const std::string first_line = text.substr(0, text.find('\n'));
    CHECK(first_line.size() <= 100);
    CHECK(text.find("Options:") < text.find("Exit codes:"));
  }
}

TEST_CASE("--stats - writes the stats to standard output when -o is a file; with -o - it is refused") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const Dir dir;
  const test::CliResult r =
      test::run_pagedgen(fmt::format("generate -q --device cpu -i '{}' -o '{}' --stats -",
                                     (dir.path / "in.jsonl").string(), (dir.path / "out.jsonl").string()),
                         dir.path / "stderr.txt", dir.path / "stdout.txt");
  CHECK(r.exit_code == 0);
  CHECK(test::read_file(dir.path / "stdout.txt").find("\"kv_bytes_per_block\"") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path / "-"));
  CHECK_FALSE(std::filesystem::exists(std::filesystem::current_path() / "-"));
  const test::CliResult both = test::run_pagedgen(
      fmt::format("generate -q --device cpu -i '{}' -o - --stats -", (dir.path / "in.jsonl").string()),
      dir.path / "stderr.txt");
  CHECK(both.exit_code == 2);
  CHECK(both.stderr_text.find("--stats - asks for standard output") != std::string::npos);
}

TEST_CASE("--max-model-len above the model's context is a usage error naming both numbers, nothing written") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const Dir dir;
  const test::CliResult r = generate(dir, "--max-model-len 100000");
  CHECK(r.exit_code == 2);
  CHECK(r.stderr_text.find("--max-model-len 100000 is above the model's context of 8192 tokens") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path / "out.jsonl"));
}
