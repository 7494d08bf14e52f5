// Inputs as large as their size allows, under a 1 GiB address-space limit (`ulimit -v`) so
// that a representation that grows with the square of its input, or a recursion it controls,
// ends the run instead of passing on this machine's 24 GB: a schema of 100,000 chained $refs
// is compiled and answered; 100,000 optional properties are refused (the key-choice cap) as
// that line's unsupported_field; a line of 1,000,000 keys (unknown ones, ignored) is answered,
// as are the lines around them. The ctest timeout is a hang guard only; no timing is asserted.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "test_paths.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

constexpr int kChainedRefs = 100'000;
constexpr int kOptionalProperties = 100'000;
constexpr int kLineKeys = 1'000'000;

// A line whose response_format schema is `schema` (compact JSON).
std::string schema_line(const std::string& id, const std::string& schema) {
  return fmt::format(
      R"({{"id": "{}", "prompt": "A JSON value:", "response_format": {{"type": "json_schema", "json_schema": )"
      R"({{"name": "s", "schema": {}}}}}}})",
      id, schema);
}

// $defs d0 -> d1 -> ... -> d(n-1) -> a string, the root referring to d0.
std::string chained_refs_schema(int n) {
  std::string schema = R"({"$ref": "#/$defs/d0", "$defs": {)";
  for (int i = 0; i < n; ++i) schema += fmt::format(R"("d{}": {{"$ref": "#/$defs/d{}"}}, )", i, i + 1);
  return schema + fmt::format(R"("d{}": {{"type": "string", "maxLength": 4}}}}}})", n);
}

std::string optional_properties_schema(int n) {
  std::string schema = R"({"type": "object", "properties": {)";
  for (int i = 0; i < n; ++i) schema += fmt::format(R"({}"p{}": {{"type": "integer"}})", i == 0 ? "" : ", ", i);
  return schema + "}}";
}

std::string many_keys_request(int n) {
  std::string line = R"({"id": "keys", "prompt": "Hi")";
  for (int i = 0; i < n; ++i) line += fmt::format(R"(, "k{}": {})", i, i);
  return line + "}";
}

}  // namespace

TEST_CASE("chained $refs, 100,000 optional properties and a line of 1,000,000 keys, in 1 GiB of address space") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  TempDir dir{"pagedgen-input-sizes"};
  const auto input = dir / "in.jsonl";
  {
    std::ofstream out(input);
    out << R"({"id": "first", "prompt": "Hello"})" << '\n'
        << schema_line("chain", chained_refs_schema(kChainedRefs)) << '\n'
        << schema_line("optional", optional_properties_schema(kOptionalProperties)) << '\n'
        << many_keys_request(kLineKeys) << '\n'
        << R"({"id": "last", "prompt": "Goodbye"})" << '\n';
  }
  INFO("input bytes: " << std::filesystem::file_size(input));
  const auto output = dir / "out.jsonl";
  // The default CPU KV pool is 1 GiB: the limit leaves room for a smaller one only.
  const int code = run_shell(fmt::format(
      "ulimit -v 1048576; '{}' generate -q -i {} -o {} --device cpu --kv-cache-memory 128MiB --max-tokens 6 2> {}",
      pagedgen_binary().string(), sh_quote(input), sh_quote(output), sh_quote(dir / "stderr")));
  INFO("stderr: " << read_file(dir / "stderr"));
  REQUIRE(code == 1);  // finished, some lines failed
  const std::vector<std::string> lines = complete_lines(read_file(output));
  REQUIRE(lines.size() == 5);
  const auto has = [](const std::string& line, const std::string& text) {
    return line.find(text) != std::string::npos;
  };
  CHECK(has(lines[0], R"("id":"first")"));
  CHECK(has(lines[0], R"("text":)"));
  CHECK(has(lines[1], R"("id":"chain")"));
  CHECK(has(lines[1], R"("text":)"));  // answered: the chain compiled
  CHECK(has(lines[2], R"("id":"optional")"));
  CHECK(has(lines[2], R"("code":"unsupported_field")"));
  CHECK(has(lines[2], "more than the 65536"));
  CHECK(has(lines[3], R"("id":"keys")"));
  CHECK(has(lines[3], R"("text":)"));  // unknown keys are ignored, each checked once
  CHECK(has(lines[4], R"("id":"last")"));
  CHECK(has(lines[4], R"("text":)"));
}
