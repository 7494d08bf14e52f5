// Structured outputs end to end on the default model, as a data team runs them (the
// feature's acceptance test): one OpenAI batch file of 220 chat requests over 11 JSON
// Schemas (the shapes Pydantic and dataset schemas produce: nested objects, arrays of
// objects, enums, bounded strings and integers, anyOf with null, $ref/$defs, a tuple, a
// root enum), sampled, then one plain file under --json-object with lines that override
// it. Every finished record is validated by an independent validator (python3-jsonschema,
// Draft 2020-12, tests/validate_structured_outputs.py): none may be invalid, at most 2%
// may be cut by max_tokens, every json_object output parses as an object. A subset of the
// batch run again at another block size, without sharing, on one thread writes the same
// lines. And the command line's refusals: a schema the grammar refuses, no file, two
// formats.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "test_paths.h"

using namespace pagedgen::test;

namespace {

struct TestSchema {
  const char* ask;     // what the user message asks for
  const char* schema;  // the JSON Schema (its "title" names it in the validator's summary)
};

// Budgets fit: the longest value of each, in ~4-byte tokens, is well under kMaxTokens.
const TestSchema kSchemas[] = {
    {"a fictional person with a name and an age",
     R"({"title": "person", "type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 24},
        "age": {"type": "integer", "minimum": 0, "maximum": 120}}, "required": ["name", "age"], "additionalProperties": false})"},
    {"a short product review with a rating from 1 to 5",
     R"({"title": "review", "type": "object", "properties": {"product": {"type": "string", "maxLength": 30},
        "rating": {"type": "integer", "minimum": 1, "maximum": 5},
        "sentiment": {"enum": ["positive", "neutral", "negative"]}, "summary": {"type": "string", "maxLength": 60}},
        "required": ["product", "rating", "sentiment", "summary"], "additionalProperties": false})"},
    {"a city, its country and its population",
     R"({"title": "city", "type": "object", "properties": {"city": {"type": "string", "maxLength": 30},
        "country": {"type": "string", "maxLength": 30}, "population": {"type": "integer", "minimum": 0, "maximum": 100000000}},
        "required": ["city", "country", "population"], "additionalProperties": false})"},
    {"a to-do list with a title and up to three items",
     R"({"title": "todo", "type": "object", "properties": {"title": {"type": "string", "maxLength": 30},
        "items": {"type": "array", "items": {"type": "string", "maxLength": 24}, "minItems": 1, "maxItems": 3}},
        "required": ["title", "items"], "additionalProperties": false})"},
    {"a claim and whether it is true",
     R"({"title": "fact", "type": "object", "properties": {"claim": {"type": "string", "maxLength": 50},
        "is_true": {"type": "boolean"}, "source": {"anyOf": [{"type": "string", "maxLength": 20}, {"type": "null"}]}},
        "required": ["claim", "is_true", "source"], "additionalProperties": false})"},
    {"a book with its author and up to two co-authors",
     R"({"title": "book", "type": "object", "$defs": {"author": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}},
        "required": ["name"], "additionalProperties": false}}, "properties": {"title": {"type": "string", "maxLength": 30},
        "author": {"$ref": "#/$defs/author"}, "coauthors": {"type": "array", "items": {"$ref": "#/$defs/author"}, "maxItems": 2}},
        "required": ["title", "author"], "additionalProperties": false})"},
    {"a word and a number from 0 to 100, as a pair",
     R"({"title": "pair", "type": "array", "prefixItems": [{"type": "string", "maxLength": 16},
        {"type": "integer", "minimum": 0, "maximum": 100}], "items": false, "minItems": 2})"},
    {"a color", R"({"title": "color", "enum": ["red", "green", "blue", "yellow", "purple"]})"},
    {"an event with a date",
     R"({"title": "event", "type": "object", "properties": {"event": {"type": "string", "maxLength": 30},
        "date": {"type": "object", "properties": {"year": {"type": "integer", "minimum": 1900, "maximum": 2100},
        "month": {"type": "integer", "minimum": 1, "maximum": 12}, "day": {"type": "integer", "minimum": 1, "maximum": 31}},
        "required": ["year", "month", "day"], "additionalProperties": false}, "online": {"type": "boolean"}},
        "required": ["event", "date"], "additionalProperties": false})"},
    {"a recipe with up to three ingredients and their grams",
     R"({"title": "recipe", "type": "object", "properties": {"name": {"type": "string", "maxLength": 24},
        "ingredients": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "object",
        "properties": {"item": {"type": "string", "maxLength": 16}, "grams": {"type": "integer", "minimum": 1, "maximum": 1000}},
        "required": ["item", "grams"], "additionalProperties": false}}}, "required": ["name", "ingredients"],
        "additionalProperties": false})"},
    {"a support ticket with a priority",
     R"({"title": "ticket", "type": "object", "properties": {"version": {"const": 1},
        "priority": {"type": "string", "enum": ["low", "medium", "high"]}, "subject": {"type": ["string", "null"], "maxLength": 40},
        "tags": {"type": "array", "items": {"enum": ["billing", "bug", "account", "other"]}, "maxItems": 2}},
        "required": ["version", "priority", "subject", "tags"], "additionalProperties": false})"},
};
constexpr int kRecordsPerSchema = 20;
constexpr int kMaxTokens = 96;

const char* kTopics[] = {"the sea",       "a library", "mountains",  "a bakery",   "space travel",
                         "a small town",  "music",     "a garden",   "winter",     "a train station",
                         "football",      "a museum",  "the desert", "a hospital", "chess",
                         "a coffee shop", "rivers",    "a school",   "robots",     "a lighthouse"};

// A JSON string of `text` (the texts above need no escapes but quotes).
std::string quoted(const std::string& text) { return "\"" + text + "\""; }

// A schema above on one line, as a JSONL field.
std::string one_line(std::string schema) {
  std::replace(schema.begin(), schema.end(), '\n', ' ');
  return schema;
}

struct ValidatorSummary {
  int64_t records = 0, samples = 0, finished = 0, cut = 0, invalid = 0, errors = 0;
  std::string text;
};

ValidatorSummary validate(const TempDir& dir, const std::filesystem::path& formats,
                          const std::filesystem::path& output) {
  const auto summary_path = dir / "summary.json";
  const int rc = run_shell(
      fmt::format("python3 {} {} {} > {} 2> {}", sh_quote(source_dir() / "tests" / "validate_structured_outputs.py"),
                  sh_quote(formats), sh_quote(output), sh_quote(summary_path), sh_quote(dir / "validator.err")));
  INFO(read_file(dir / "validator.err"));
  REQUIRE(rc == 0);
  ValidatorSummary s;
  s.text = read_file(summary_path);
  simdjson::dom::parser parser;
  simdjson::dom::element e = parser.parse(s.text);
  s.records = int64_t(e["records"]);
  s.samples = int64_t(e["samples"]);
  s.finished = int64_t(e["finished"]);
  s.cut = int64_t(e["cut"]);
  s.invalid = static_cast<int64_t>(simdjson::dom::array(e["invalid"]).size());
  s.errors = static_cast<int64_t>(simdjson::dom::array(e["errors"]).size());
  return s;
}

bool has_jsonschema() { return run_shell("python3 -c 'import jsonschema' >/dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("220 sampled records over 11 schemas all validate; json_object outputs parse; lines match on a subset") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  REQUIRE_MESSAGE(has_jsonschema(), "python3-jsonschema is missing: run scripts/install-deps.sh");
  TempDir dir("pagedgen-structured");
  const auto input = dir / "batch.jsonl";
  const auto formats = dir / "formats.json";
  {
    std::ofstream in(input);
    std::ofstream f(formats);
    f << "{";
    int line = 0;
    for (int r = 0; r < kRecordsPerSchema; ++r) {
      for (std::size_t s = 0; s < std::size(kSchemas); ++s, ++line) {
        const std::string id = fmt::format("rec-{}", line);
        const std::string user =
            fmt::format("Write {} related to {}. Answer with JSON only.", kSchemas[s].ask, kTopics[r]);
        in << fmt::format(
            R"({{"custom_id": "{}", "method": "POST", "url": "/v1/chat/completions", "body": {{"messages": [)"
            R"({{"role": "system", "content": "You are a data generator. You answer with one JSON value."}}, )"
            R"({{"role": "user", "content": {}}}], "max_tokens": {}, "temperature": 0.8, "top_p": 0.95, "seed": {}, )"
            R"("response_format": {{"type": "json_schema", "json_schema": {{"name": "s{}", "strict": true, "schema": {}}}}}}}}})"
            "\n",
            id, quoted(user), kMaxTokens, line, s, one_line(kSchemas[s].schema));
        f << (line > 0 ? ",\n" : "") << quoted(id) << ": " << kSchemas[s].schema;
      }
    }
    f << "}\n";
  }
  const auto output = dir / "batch.out.jsonl";
  const auto start = std::chrono::steady_clock::now();
  const CliResult r = run_pagedgen(fmt::format("generate -q -i {} -o {} --stats {} --max-num-seqs 64", sh_quote(input),
                                               sh_quote(output), sh_quote(dir / "stats.json")),
                                   dir / "stderr.txt");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(r.stderr_text);
  const ValidatorSummary batch = validate(dir, formats, output);
  MESSAGE("batch run: " << seconds << " s, " << json_int(read_file(dir / "stats.json"), "tokens", "generated")
                        << " tokens generated; validator: " << batch.text);
  CHECK(r.exit_code == 0);
  CHECK(batch.records == 220);
  CHECK(batch.errors == 0);
  CHECK(batch.samples == 220);
  CHECK(batch.finished + batch.cut == 220);
  CHECK(batch.invalid == 0);
  CHECK(batch.cut * 50 <= batch.samples);  // at most 2%

  // The first 24 lines again, alone, at block size 8, without sharing, on one thread: the
  // same lines (their ids come from their line numbers, the same in both files).
  const std::vector<std::string> lines = complete_lines(read_file(input));
  const auto subset = dir / "subset.jsonl";
  {
    std::ofstream out(subset);
    for (std::size_t i = 0; i < 24; ++i) out << lines[i] << "\n";
  }
  const auto subset_output = dir / "subset.out.jsonl";
  const CliResult s = run_pagedgen(fmt::format("generate -q -i {} -o {} --block-size 8 --no-prefix-sharing --threads 1",
                                               sh_quote(subset), sh_quote(subset_output)),
                                   dir / "stderr.txt");
  INFO(s.stderr_text);
  REQUIRE(s.exit_code == 0);
  const std::vector<std::string> full = complete_lines(read_file(output));
  const std::vector<std::string> part = complete_lines(read_file(subset_output));
  REQUIRE(part.size() == 24);
  for (std::size_t i = 0; i < part.size(); ++i) {
    CAPTURE(i);
    CHECK(without_cached_tokens(part[i]) == without_cached_tokens(full[i]));
  }
}

TEST_CASE("--json-object constrains every plain line but those with their own response_format") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  REQUIRE_MESSAGE(has_jsonschema(), "python3-jsonschema is missing: run scripts/install-deps.sh");
  TempDir dir("pagedgen-json-object");
  const auto input = dir / "in.jsonl";
  const auto formats = dir / "formats.json";
  {
    std::ofstream in(input);
    std::ofstream f(formats);
    f << "{";
    for (int i = 0; i < 24; ++i) {
      const std::string id = fmt::format("obj-{}", i);
      if (i % 8 == 7) {  // the line's own format wins over the flag
        in << fmt::format(
            R"({{"id": "{}", "prompt": "The weather today is", "max_tokens": 6, "response_format": {{"type": "text"}}}})"
            "\n",
            id);
        f << (i > 0 ? ",\n" : "") << quoted(id) << ": \"text\"";
      } else if (i % 8 == 3) {
        in << fmt::format(
            R"({{"id": "{}", "messages": [{{"role": "user", "content": "Name a color you think of for {}."}}], )"
            R"("response_format": {{"type": "json_schema", "json_schema": {{"name": "yn", "schema": {}}}}}}})"
            "\n",
            id, kTopics[i], one_line(kSchemas[7].schema));
        f << (i > 0 ? ",\n" : "") << quoted(id) << ": " << kSchemas[7].schema;
      } else {
        in << fmt::format(
            R"({{"id": "{}", "messages": [{{"role": "user", "content": "Describe {} as a JSON object."}}], "seed": {}}})"
            "\n",
            id, kTopics[i % 20], i);
        f << (i > 0 ? ",\n" : "") << quoted(id) << ": \"json_object\"";
      }
    }
    f << "}\n";
  }
  const auto output = dir / "out.jsonl";
  const CliResult r =
      run_pagedgen(fmt::format("generate -q -i {} -o {} --json-object --max-tokens 64 --temperature 0.7",
                               sh_quote(input), sh_quote(output)),
                   dir / "stderr.txt");
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  const ValidatorSummary summary = validate(dir, formats, output);
  MESSAGE("json_object run: " << summary.text);
  CHECK(summary.records == 24);
  CHECK(summary.errors == 0);
  CHECK(summary.invalid == 0);
  CHECK(summary.finished >= 10);  // objects may run past 64 tokens: those are cut, never invalid
  // The manifest records the flag: resuming without it is refused.
  const CliResult resume =
      run_pagedgen(fmt::format("generate -q -i {} -o {} --max-tokens 64 --temperature 0.7 --resume", sh_quote(input),
                               sh_quote(output)),
                   dir / "stderr.txt");
  CHECK(resume.exit_code == 3);
  CHECK(resume.stderr_text.find("response_format was json_object, now not given") != std::string::npos);
}

TEST_CASE("--json-schema: a refused, malformed or missing schema file fails at startup naming the flag") {
  TempDir dir("pagedgen-json-schema-flag");
  const auto input = dir / "in.jsonl";
  write_file(input, std::string_view("{\"prompt\": \"hi\"}\n"));
  write_file(dir / "refused.json",
             std::string_view(R"({"type": "object", "properties": {"id": {"type": "string", "format": "date"}}})"));
  write_file(dir / "broken.json", std::string_view(R"({"type": )"));
  write_file(dir / "good.json", std::string_view(R"({"type": "boolean"})"));
  const auto run = [&](const std::string& flags) {
    return run_pagedgen(fmt::format("generate -q -m /nonexistent/model.gguf -i {} -o {} {}", sh_quote(input),
                                    sh_quote(dir / "out.jsonl"), flags),
                        dir / "stderr.txt");
  };
  const CliResult refused = run(fmt::format("--json-schema {}", sh_quote(dir / "refused.json")));
  CHECK(refused.exit_code == 2);
  CHECK(refused.stderr_text ==
        fmt::format("pagedgen: error: --json-schema: '{}': #/properties/id: 'format' is not supported by structured "
                    "outputs (the grammar cannot enforce it); remove it from the schema (see --help)\n",
                    (dir / "refused.json").string()));
  const CliResult broken = run(fmt::format("--json-schema {}", sh_quote(dir / "broken.json")));
  CHECK(broken.exit_code == 2);
  CHECK(broken.stderr_text.find("--json-schema: '" + (dir / "broken.json").string() +
                                "': the JSON schema is not valid JSON") != std::string::npos);
  const CliResult missing = run(fmt::format("--json-schema {}", sh_quote(dir / "missing.json")));
  CHECK(missing.exit_code == 2);
  CHECK(missing.stderr_text.find("--json-schema: cannot read '" + (dir / "missing.json").string() + "'") !=
        std::string::npos);
  const CliResult both = run(fmt::format("--json-schema {} --json-object", sh_quote(dir / "good.json")));
  CHECK(both.exit_code == 2);
  CHECK(both.stderr_text.find("--json-schema excludes --json-object") != std::string::npos);
  const CliResult stop = run(fmt::format("--json-schema {} --stop x", sh_quote(dir / "good.json")));
  CHECK(stop.exit_code == 2);
  CHECK(stop.stderr_text.find("--stop: cannot be given with response_format json_schema") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "out.jsonl"));
}
