// The CLI contract for unreadable model files: `pagedgen inspect -m FILE` prints exactly
// one line "pagedgen: error: <message>" on stderr, naming the problem, and exits with 3.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "test_paths.h"

using namespace pagedgen::test;

namespace {

// Runs `pagedgen inspect -m model`, stdout discarded, stderr captured in a file.
CliResult run_inspect(const TempDir& dir, const std::filesystem::path& model) {
  return run_pagedgen(fmt::format("inspect -m '{}'", model.string()), dir / "stderr.txt");
}

// Exit code 3 and one stderr line "pagedgen: error: ..." containing the path and `words`.
void expect_fatal(const TempDir& dir, const std::filesystem::path& model,
                  std::initializer_list<std::string_view> words) {
  const CliResult result = run_inspect(dir, model);
  CAPTURE(result.stderr_text);
  CHECK(result.exit_code == 3);
  CHECK(result.stderr_text.rfind("pagedgen: error: ", 0) == 0);
  REQUIRE(!result.stderr_text.empty());
  CHECK(result.stderr_text.back() == '\n');
  CHECK(result.stderr_text.find('\n') == result.stderr_text.size() - 1);
  CHECK(result.stderr_text.find(model.string()) != std::string::npos);
  for (const std::string_view word : words) {
    CHECK_MESSAGE(result.stderr_text.find(word) != std::string::npos, "expected '", word, "'");
  }
}

}  // namespace

TEST_CASE("pagedgen inspect on bad model files: one error line, exit code 3") {
  REQUIRE_MESSAGE(std::filesystem::exists(pagedgen_binary()),
                  "the pagedgen binary is not built: ", pagedgen_binary().string());
  TempDir dir("pagedgen-e2e-bad");
  const GgufBytes good = small_gguf().build();

  SUBCASE("truncated GGUF") {
    const std::span<const std::byte> cut(good.bytes.data(), good.bytes.size() - 5);
    write_file(dir / "truncated.gguf", cut);
    expect_fatal(dir, dir / "truncated.gguf", {"truncated"});
    write_file(dir / "header-only.gguf", std::span<const std::byte>(good.bytes.data(), 30));
    expect_fatal(dir, dir / "header-only.gguf", {"truncated"});
  }
  SUBCASE("tensor offset past the end") {
    GgufBytes bad = good;
    bad.patch_u64(bad.at("offset:norm.weight"), 1 << 20);
    write_file(dir / "offset.gguf", bad.bytes);
    expect_fatal(dir, dir / "offset.gguf", {"'norm.weight'", "past the end"});
  }
  SUBCASE("huge array length") {
    GgufBytes bad = good;
    bad.patch_u64(bad.at("value:test.words") + 4, uint64_t{1} << 60);
    write_file(dir / "array.gguf", bad.bytes);
    expect_fatal(dir, dir / "array.gguf", {"'test.words'", "1152921504606846976 elements"});
  }
  SUBCASE("not a GGUF file") {
    const std::string text = "{\"this\": \"is json\"}\n";
    std::vector<std::byte> bytes(text.size());
    std::memcpy(bytes.data(), text.data(), text.size());
    write_file(dir / "model.json", bytes);
    expect_fatal(dir, dir / "model.json", {"not a GGUF file (magic 7b 22 74 68"});
  }
}
