// Pins the bytes of `pagedgen generate` across refactors: each sample at block sizes 8, 16
// and 64 must give exactly the file that commit 446a6bf wrote (tests/data/golden, see its
// README): outputs byte-identical before and after a refactor that should change no byte.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "test_paths.h"

using namespace pagedgen::test;

namespace {

// The golden files hold this model's bits; another one (PAGEDGEN_MODEL) cannot match them.
constexpr const char* kGoldenModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";
constexpr int kBlockSizes[] = {8, 16, 64};

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Where two texts first differ, as a message naming the 1-based line and both versions.
std::string first_difference(const std::string& golden, const std::string& actual) {
  const std::vector<std::string> golden_lines = split_lines(golden);
  const std::vector<std::string> actual_lines = split_lines(actual);
  const size_t num_lines = std::max(golden_lines.size(), actual_lines.size());
  for (size_t i = 0; i < num_lines; ++i) {
    const std::string golden_line = i < golden_lines.size() ? golden_lines[i] : "<no line>";
    const std::string actual_line = i < actual_lines.size() ? actual_lines[i] : "<no line>";
    if (golden_line != actual_line) {
      return fmt::format("first difference at line {}:\n  golden: {}\n  actual: {}", i + 1, golden_line, actual_line);
    }
  }
  return "the lines are equal; the files differ in their final newline";
}

// Runs the golden command (tests/data/golden/README.md) for one sample at every block size.
void check_matches_golden(const std::string& sample) {
  if (default_model()->filename() != kGoldenModelFile) {
    MESSAGE(fmt::format("skipped: PAGEDGEN_MODEL is not {}, whose bits the golden files hold", kGoldenModelFile));
    return;
  }
  TempDir dir("pagedgen-golden");
  const auto input = source_dir() / "samples" / (sample + ".jsonl");
  for (int block_size : kBlockSizes) {
    CAPTURE(block_size);
    const std::string name = fmt::format("{}.bs{}.jsonl", sample, block_size);
    const auto out = dir / name;
    const CliResult r =
        run_pagedgen(fmt::format("generate --device cpu --cpu-math exact -i '{}' -o '{}' --block-size {}",
                                 input.string(), out.string(), block_size),
                     dir / "stderr.txt");
    REQUIRE_MESSAGE(r.exit_code == 0, r.stderr_text);
    const std::string golden = read_file(data_dir() / "golden" / name);
    const std::string actual = read_file(out);
    // A bool, so that a failure prints the first differing line rather than both files.
    const bool identical = actual == golden;
    CHECK_MESSAGE(identical, name << " differs from the golden file: " << first_difference(golden, actual));
  }
}

}  // namespace

TEST_CASE("shared_prefix sample: output bytes equal the golden files at block sizes 8, 16, 64") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  check_matches_golden("shared_prefix");
}

TEST_CASE("chat sample: output bytes equal the golden files at block sizes 8, 16, 64") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  check_matches_golden("chat");
}

TEST_CASE("openai_batch sample: output bytes equal the golden files at block sizes 8, 16, 64") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  check_matches_golden("openai_batch");
}
