// vLLM's guided outputs end to end on the default model: one plain file of 240 sampled
// lines asking for a 50-way choice, regexes, GBNF grammars and a JSON Schema with `pattern`
// (through guided_* fields and structured_outputs), with multi-byte characters and texts
// whose tokens cross quotes, escapes and separators. Every finished sample is checked by
// tests/validate_guided_outputs.py, which shares no code with pagedgen's compilers (Python's
// re.fullmatch and re.search on patterns that mean the same in Python and ECMA-262, and its
// own GBNF reader): none may be invalid, and most must finish within max_tokens. Then the
// command line's --choice, --regex and --grammar defaults, and their refusals.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "test_paths.h"
#include "util/json_quote.h"

using namespace pagedgen::test;
using pagedgen::json_quote;

namespace {

// What a line asks for, as its request field and as the checker's expectation.
struct GuidedCase {
  std::string prompt;
  std::string field;     // `"key": value` of the request line
  std::string expected;  // the checker's JSON for it
  int max_tokens = 24;
};

std::vector<std::string> fifty_labels() {
  std::vector<std::string> labels = {"positive",   "positively", "pos",    "negative",  "neutral", "mixed",
                                     "café",       "naïve",      "Zürich", "São Paulo", "日本語",  "New York",
                                     "New Yorker", "\"quoted\"", "a\\b",   "tab\there"};
  for (int i = 0; labels.size() < 50; ++i) labels.push_back(fmt::format("label {}", i));
  return labels;
}

std::string json_list(const std::vector<std::string>& texts) {
  std::string list = "[";
  for (const std::string& t : texts) list += (list.size() > 1 ? ", " : "") + json_quote(t);
  return list + "]";
}

const char* const kRegexes[] = {
    R"([0-9]{3}-[0-9]{4})",
    R"((yes|no), [a-z]{2,8}( [a-z]{2,8}){0,3}\.)",
    R"([A-Z][a-z]{1,9}( [A-Z][a-z]{1,9})?)",
    R"([0-9]+(\.[0-9]{1,2})? (€|£|¥))",
    R"("[^"\n]{1,12}": [0-9]{1,3})",
    R"((über|naïve|café)-[a-z]{1,6})",
};

const char* const kGrammars[] = {
    "root ::= expr\nexpr ::= term ([-+*] term){0,3}\nterm ::= [0-9]{1,3} | \"(\" expr \")\"\n",
    "# pairs with an arrow\nroot ::= pair (\"; \" pair){0,2}\npair ::= key \"→\" val\nkey ::= [a-z]{1,8}\n"
    "val ::= [0-9]{1,4} | \"\\\"\" [^\"\\n]{0,8} \"\\\"\"\n",
};

const char* const kPatternSchema =
    R"({"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{2,4}$"},)"
    R"( "city": {"type": "string", "pattern": "[a-z]", "maxLength": 12},)"
    R"( "note": {"type": "string", "pattern": "\"|é", "maxLength": 8}},)"
    R"( "required": ["code", "city", "note"], "additionalProperties": false})";
const char* const kPatternExpected =
    R"({"pattern": {"code": "^[A-Z]{2}-[0-9]{2,4}$", "city": "[a-z]", "note": "\"|é"}})";

// The i-th line's case: choices, regexes, grammars and the pattern schema in turn, each
// kind also through structured_outputs.
GuidedCase guided_case(int i) {
  const bool structured = (i / 4) % 3 == 2;
  const auto field = [&](std::string_view guided, std::string_view key, const std::string& value) {
    return structured ? fmt::format(R"("structured_outputs": {{"{}": {}}})", key, value)
                      : fmt::format(R"("{}": {})", guided, value);
  };
  switch (i % 4) {
    case 0: {
      const std::string list = json_list(fifty_labels());
      return {"Classify the mood of this sentence: I love the sea.", field("guided_choice", "choice", list),
              fmt::format(R"({{"choice": {}}})", list)};
    }
    case 1: {
      const std::string regex = json_quote(kRegexes[(i / 4) % std::size(kRegexes)]);
      return {"Answer briefly:", field("guided_regex", "regex", regex), fmt::format(R"({{"regex": {}}})", regex)};
    }
    case 2: {
      const std::string grammar = json_quote(kGrammars[(i / 4) % std::size(kGrammars)]);
      return {"Write something short:", field("guided_grammar", "grammar", grammar),
              fmt::format(R"({{"grammar": {}}})", grammar), 48};
    }
    default:
      return {"Describe a city as JSON.", field("guided_json", "json", kPatternSchema), kPatternExpected, 64};
  }
}

struct CheckSummary {
  int64_t records = 0, samples = 0, finished = 0, invalid = 0, errors = 0;
  std::string text;
};

CheckSummary check_outputs(const TempDir& dir, const std::filesystem::path& formats,
                           const std::filesystem::path& output) {
  const auto summary_path = dir / "summary.json";
  const int rc = run_shell(
      fmt::format("python3 {} {} {} > {} 2> {}", sh_quote(source_dir() / "tests" / "validate_guided_outputs.py"),
                  sh_quote(formats), sh_quote(output), sh_quote(summary_path), sh_quote(dir / "checker.err")));
  INFO(read_file(dir / "checker.err"));
  REQUIRE(rc == 0);
  CheckSummary s;
  s.text = read_file(summary_path);
  simdjson::dom::parser parser;
  const simdjson::dom::element e = parser.parse(s.text);
  s.records = int64_t(e["records"]);
  s.samples = int64_t(e["samples"]);
  s.finished = int64_t(e["finished"]);
  s.invalid = static_cast<int64_t>(simdjson::dom::array(e["invalid"]).size());
  s.errors = static_cast<int64_t>(simdjson::dom::array(e["errors"]).size());
  return s;
}

}  // namespace

TEST_CASE("240 sampled lines of choices, regexes, grammars and patterns: every finished output checks") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  TempDir dir("pagedgen-guided");
  const auto input = dir / "in.jsonl";
  const auto formats = dir / "formats.json";
  constexpr int kLines = 240;
  {
    std::ofstream in(input);
    std::ofstream f(formats);
    f << "{";
    for (int i = 0; i < kLines; ++i) {
      const GuidedCase c = guided_case(i);
      in << fmt::format(R"({{"id": "g{}", "prompt": {}, "seed": {}, "max_tokens": {}, {}}})", i, json_quote(c.prompt),
                        i, c.max_tokens, c.field)
         << "\n";
      f << (i > 0 ? ",\n" : "") << fmt::format(R"("g{}": {})", i, c.expected);
    }
    f << "}\n";
  }
  const auto output = dir / "out.jsonl";
  const CliResult r = run_pagedgen(fmt::format("generate -q -i {} -o {} --temperature 0.9 "
                                               "--max-num-seqs 64",
                                               sh_quote(input), sh_quote(output)),
                                   dir / "stderr.txt");
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  const CheckSummary summary = check_outputs(dir, formats, output);
  MESSAGE("guided run: " << summary.text);
  CHECK(summary.records == kLines);
  CHECK(summary.errors == 0);
  CHECK(summary.samples == kLines);
  CHECK(summary.invalid == 0);
  CHECK(summary.finished * 10 >= summary.samples * 8);  // outputs past max_tokens are cut, never invalid
}

TEST_CASE("--choice, --regex and --grammar constrain lines without their own; refusals name the flag") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  TempDir dir("pagedgen-guided-flags");
  const auto input = dir / "in.jsonl";
  {
    std::ofstream in(input);
    for (int i = 0; i < 8; ++i)
      in << fmt::format(R"({{"id": "f{}", "prompt": "Pick one:", "seed": {}}})", i, i) << "\n";
    in << R"({"id": "own", "prompt": "Pick one:", "guided_regex": "[0-9]{2}"})"
       << "\n";
  }
  write_file(dir / "g.gbnf", std::string_view("root ::= (\"la\" | \"lo\"){1,3} \"!\"\n"));
  const auto run = [&](const std::string& flags) {
    return run_pagedgen(fmt::format("generate -q -i {} -o {} --max-tokens 12 --temperature 1 {}", sh_quote(input),
                                    sh_quote(dir / "out.jsonl"), flags),
                        dir / "stderr.txt");
  };
  const auto texts = [&] {
    std::vector<std::string> out;
    simdjson::dom::parser parser;
    for (const std::string& line : complete_lines(read_file(dir / "out.jsonl")))
      out.emplace_back(std::string_view(parser.parse(line)["text"]));
    std::filesystem::remove(dir / "out.jsonl");
    std::filesystem::remove(dir / "out.jsonl.manifest.json");
    return out;
  };
  REQUIRE(run("--choice red --choice 'dark blue' --choice grün").exit_code == 0);
  std::vector<std::string> out = texts();
  REQUIRE(out.size() == 9);
  for (int i = 0; i < 8; ++i) CHECK((out[i] == "red" || out[i] == "dark blue" || out[i] == "grün"));
  CHECK(out[8].size() == 2);  // the line's own regex wins
  REQUIRE(run("--regex '[a-c]{2,4}'").exit_code == 0);
  out = texts();
  for (int i = 0; i < 8; ++i) CHECK((out[i].size() >= 2 && out[i].find_first_not_of("abc") == std::string::npos));
  REQUIRE(run(fmt::format("--grammar {}", sh_quote(dir / "g.gbnf"))).exit_code == 0);
  out = texts();
  for (int i = 0; i < 8; ++i) CHECK((out[i].ends_with("!") && out[i].size() >= 3));

  const CliResult refused = run("--regex '(a)\\1'");
  CHECK(refused.exit_code == 2);
  CHECK(refused.stderr_text ==
        "pagedgen: error: --regex: '(a)\\1': the regex uses a backreference (\\1 to \\9) at offset 3, which "
        "structured outputs cannot enforce; rewrite the pattern without it (see --help)\n");
  const CliResult two = run("--regex a --choice b");
  CHECK(two.exit_code == 2);
  CHECK(two.stderr_text.find("--regex excludes --choice") != std::string::npos);
  const CliResult missing = run(fmt::format("--grammar {}", sh_quote(dir / "missing.gbnf")));
  CHECK(missing.exit_code == 2);
  CHECK(missing.stderr_text.find("--grammar: cannot read") != std::string::npos);
}
