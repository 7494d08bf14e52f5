// response_format (structured outputs) as the request reader reads it, in the plain and the
// OpenAI batch formats: the three types, the schema kept as compact text, the line's own
// format winning over the command line's default, and every malformed or refused form as
// the line's error (unsupported_field for what the grammar refuses, invalid_value for a
// malformed schema, both naming the keyword and where it is).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <sstream>
#include <string>
#include <vector>

#include "grammar/grammar_error.h"
#include "io/json_schema_format.h"
#include "io/request_reader.h"
#include "util/error.h"

using namespace pagedgen;

namespace {

// The format of a request, or "E <code>: <message>" for an error line.
std::string format_of(const RequestItem& item) {
  if (const auto* error = std::get_if<RequestError>(&item)) return fmt::format("E {}: {}", error->code, error->message);
  const ResponseFormat& format = std::get<Request>(item).sampling.response_format;
  if (format.spec.empty()) return std::string(response_format_type_name(format.type));
  return fmt::format("{} {}", response_format_type_name(format.type), format.spec);
}

std::vector<std::string> read_formats(const std::string& input, RequestFormat request_format,
                                      const SamplingParams& defaults = {}) {
  std::istringstream stream(input);
  RequestReader reader(stream, defaults, request_format);
  std::vector<std::string> formats;
  while (std::optional<RequestItem> item = reader.next()) formats.push_back(format_of(*item));
  return formats;
}

// One plain line with these fields after its prompt.
std::string format_plain(const std::string& fields, const SamplingParams& defaults = {}) {
  const std::vector<std::string> formats =
      read_formats(fmt::format(R"({{"prompt": "p", {}}})", fields), RequestFormat::kPlain, defaults);
  REQUIRE(formats.size() == 1);
  return formats.front();
}

// One OpenAI chat line with these body fields after its messages.
std::string format_batch(const std::string& fields, const SamplingParams& defaults = {}) {
  const std::vector<std::string> formats = read_formats(
      fmt::format(R"({{"custom_id": "r", "method": "POST", "url": "/v1/chat/completions", "body": {{"messages": )"
                  R"([{{"role": "user", "content": "c"}}], {}}}}})",
                  fields),
      RequestFormat::kOpenAiBatch, defaults);
  REQUIRE(formats.size() == 1);
  return formats.front();
}

std::string json_schema(const std::string& schema) {
  return fmt::format(R"("response_format": {{"type": "json_schema", "json_schema": {{"name": "n", "schema": {}}}}})",
                     schema);
}

}  // namespace

TEST_CASE("the three types in both formats; the schema is kept compact, strings untouched") {
  CHECK(format_plain(R"("response_format": {"type": "text"})") == "text");
  CHECK(format_plain(R"("response_format": {"type": "json_object"})") == "json_object");
  CHECK(format_plain(R"("response_format": null)") == "text");
  CHECK(format_plain(R"("temperature": 0)") == "text");
  const std::string schema =
      R"({ "type" : "object",	"properties": {"a b": {"type": "string", "enum": ["x  y", "z"]}}, "required": [ "a b" ] })";
  const std::string compact =
      R"({"type":"object","properties":{"a b":{"type":"string","enum":["x  y","z"]}},"required":["a b"]})";
  CHECK(format_batch(R"("response_format": {"type": "json_schema", "json_schema": {"name": "person", "description": "d", )"
              R"("strict": true, "schema": )" +
              schema + "}}") == "json_schema " + compact);
  CHECK(format_plain(json_schema(schema)) == "json_schema " + compact);
  CHECK(format_batch(R"("response_format": {"type": "json_object"})") == "json_object");
  CHECK(
      format_batch(
          R"("response_format": {"json_schema": {"name": "n", "schema": true, "strict": null}, "type": "json_schema"})") ==
      "json_schema true");
  CHECK(
      format_batch(
          R"("response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {}, "strict": false}})") ==
      "json_schema {}");
}

TEST_CASE("a line's own response_format wins over the default of --json-schema / --json-object") {
  SamplingParams defaults;
  defaults.response_format = json_schema_format(R"({"type": "integer"})");
  CHECK(format_plain(R"("max_tokens": 3)", defaults) == R"(json_schema {"type":"integer"})");
  CHECK(format_plain(R"("response_format": null)", defaults) == R"(json_schema {"type":"integer"})");
  CHECK(format_plain(R"("response_format": {"type": "text"})", defaults) == "text");
  CHECK(format_batch(R"("response_format": {"type": "json_object"})", defaults) == "json_object");
  // Fields that would cut or hold open the default's value are errors of the line.
  CHECK(format_plain(R"("stop": "x")", defaults) ==
        "E invalid_value: stop cannot be given with response_format json_schema: a stop string would cut the value "
        "short; remove one of them");
  CHECK(format_plain(R"("stop": "x", "response_format": {"type": "text"})", defaults) == "text");
}

TEST_CASE("fields that would cut the value short or hold it open are refused beside a constrained format") {
  const std::string object = R"("response_format": {"type": "json_object"}, )";
  CHECK(format_plain(object + R"("min_tokens": 2)") ==
        "E invalid_value: min_tokens must be 0 with response_format json_object (the value may be complete sooner), "
        "got 2");
  CHECK(format_plain(object + R"("ignore_eos": true)") ==
        "E invalid_value: ignore_eos cannot be true with response_format json_object: the text ends where the value "
        "does");
  CHECK(format_batch(object + R"("stop": ["}"])") ==
        "E invalid_value: stop cannot be given with response_format json_object: a stop string would cut the value "
        "short; remove one of them");
  CHECK(format_plain(object + R"("stop_token_ids": [5])") ==
        "E invalid_value: stop_token_ids cannot be given with response_format json_object: a stop token would cut "
        "the value short; remove one of them");
  CHECK(format_plain(object + R"("min_tokens": 0, "ignore_eos": false, "stop": [], "stop_token_ids": [])") == "json_object");
}

TEST_CASE("malformed response_format values name the field") {
  CHECK(format_plain(R"("response_format": "json")") ==
        R"(E invalid_type: response_format must be an object such as {"type": "json_object"}, got a string)");
  CHECK(format_batch(R"("response_format": {})") ==
        R"(E missing_field: body.response_format.type is missing: give "text", "json_object" or "json_schema")");
  CHECK(format_plain(R"("response_format": {"type": "xml"})") ==
        R"(E invalid_value: response_format.type must be "text", "json_object" or "json_schema", got "xml")");
  CHECK(format_plain(R"("response_format": {"type": 1})") ==
        "E invalid_type: response_format.type must be a string, got a number");
  CHECK(
      format_plain(R"("response_format": {"type": "json_schema"})") ==
      R"(E missing_field: response_format.json_schema is missing: type "json_schema" needs {"name": ..., "schema": {...}})");
  CHECK(format_batch(R"("response_format": {"type": "json_object", "json_schema": {"name": "n", "schema": {}}})") ==
        R"(E conflicting_fields: body.response_format.json_schema is given but body.response_format.type is )"
        R"("json_object"; give type "json_schema" or remove json_schema)");
  CHECK(format_plain(R"("response_format": {"type": "json_object", "schema": {}})") ==
        "E unsupported_field: response_format.schema is not supported by pagedgen (it reads type and json_schema); "
        "remove it");
  CHECK(format_batch(R"("response_format": {"type": "json_schema", "json_schema": {"schema": {}}})") ==
        "E missing_field: body.response_format.json_schema.name is missing: give the schema a name, as the OpenAI "
        "API requires");
  CHECK(format_batch(R"("response_format": {"type": "json_schema", "json_schema": {"name": "n"}})") ==
        "E missing_field: body.response_format.json_schema.schema is missing: give the JSON Schema the output must "
        "follow");
  CHECK(format_batch(R"("response_format": {"type": "json_schema", "json_schema": {"name": "", "schema": {}}})") ==
        "E invalid_value: body.response_format.json_schema.name must be a non-empty string");
  CHECK(
      format_batch(R"("response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {}, "strict": 1}})") ==
      "E invalid_type: body.response_format.json_schema.strict must be true or false, got a number");
  CHECK(format_batch(R"("response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": [1]}})") ==
        "E invalid_type: body.response_format.json_schema.schema must be a JSON Schema (an object, or true or "
        "false), got a list");
  CHECK(
      format_plain(R"("response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {}, "extra": 1}})") ==
      "E unsupported_field: response_format.json_schema.extra is not supported by pagedgen (it reads name, schema, "
      "strict and description); remove it");
}

TEST_CASE(
    "a schema the grammar refuses is unsupported_field, a malformed one invalid_value, naming keyword and place") {
  CHECK(format_plain(json_schema(R"({"type": "object", "properties": {"id": {"type": "string", "pattern": "^a(?!b)$"}}})")) ==
        "E unsupported_field: response_format.json_schema.schema: #/properties/id: 'pattern' is not supported here: "
        "the regex uses lookaround ((?=, (?!, (?<=, (?<!) at offset 2, which structured outputs cannot enforce; "
        "rewrite the pattern without it");
  CHECK(
      format_batch(
          R"("response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "string", "format": "email"}}})") ==
      "E unsupported_field: body.response_format.json_schema.schema: #: 'format' is not supported by structured "
      "outputs (the grammar cannot enforce it); remove it from the schema");
  CHECK(format_plain(json_schema(R"({"type": "array", "items": {"type": "number", "maximum": 3}})")) ==
        "E unsupported_field: response_format.json_schema.schema: #/items: 'maximum' is supported for integers only "
        "(\"type\": \"integer\"), not for numbers; make the value an integer or remove the bound");
  CHECK(format_plain(json_schema(R"({"type": "strin"})")) ==
        "E invalid_value: response_format.json_schema.schema: #: unknown type 'strin' (types are null, boolean, "
        "object, array, string, number, integer)");
  CHECK(format_plain(json_schema(R"({"type": "string", "minLength": 3, "maxLength": 2})")) ==
        "E invalid_value: response_format.json_schema.schema: #: minLength 3 is above maxLength 2: no string "
        "satisfies the schema");
  CHECK(format_plain(json_schema("false"))
            .starts_with("E invalid_value: response_format.json_schema.schema: #: no JSON value "
                         "satisfies the schema"));
}

TEST_CASE("each distinct schema is checked once per reader; its lines keep their own result") {
  // Three lines, two schemas (one refused): the reader answers every line.
  const std::string good = json_schema(R"({"type": "boolean"})");
  const std::string bad = json_schema(R"({"type": "string", "format": "x"})");
  const std::string input = fmt::format(
      "{{\"prompt\": \"a\", {}}}\n{{\"prompt\": \"b\", {}}}\n{{\"prompt\": \"c\", {}}}\n"
      "{{\"prompt\": \"d\", {}}}\n",
      good, bad, good, bad);
  const std::vector<std::string> formats = read_formats(input, RequestFormat::kPlain);
  REQUIRE(formats.size() == 4);
  CHECK(formats[0] == R"(json_schema {"type":"boolean"})");
  CHECK(formats[2] == formats[0]);
  CHECK(formats[1].starts_with("E unsupported_field: response_format.json_schema.schema: #: 'format'"));
  CHECK(formats[3] == formats[1]);
}

TEST_CASE("json_schema_format: compact text, and the grammar's two kinds of error") {
  CHECK(json_schema_format(" {\"type\" :\n \"null\"}\n").spec == R"({"type":"null"})");
  CHECK(json_schema_format(" {\"type\" :\n \"null\"}\n").type == ResponseFormat::Type::kJsonSchema);
  CHECK_THROWS_AS(json_schema_format(R"({"type": "string", "format": "x"})"), UnsupportedSchemaError);
  CHECK_THROWS_WITH_AS(json_schema_format("{\"type\": "), doctest::Contains("not valid JSON"), Error);
  CHECK_THROWS_WITH_AS(json_schema_format(""), doctest::Contains("not valid JSON"), Error);
}

// One OpenAI completions line with these body fields after its prompt.
std::string format_completion(const std::string& fields) {
  const std::vector<std::string> formats = read_formats(
      fmt::format(R"({{"custom_id": "r", "method": "POST", "url": "/v1/completions", "body": {{"prompt": "p", {}}}}})",
                  fields),
      RequestFormat::kOpenAiBatch);
  REQUIRE(formats.size() == 1);
  return formats.front();
}

TEST_CASE("vLLM's guided fields and structured_outputs in plain lines and both OpenAI bodies") {
  using Read = std::string (*)(const std::string&);
  const Read reads[] = {[](const std::string& f) { return format_plain(f); }, [](const std::string& f) { return format_batch(f); },
                        [](const std::string& f) { return format_completion(f); }};
  for (const Read read : reads) {
    CHECK(read(R"("guided_regex": "[0-9]{3}")") == "regex [0-9]{3}");
    CHECK(read(R"("guided_choice": ["yes", "no", "caf\u00e9 \"x\""])") == R"(choice ["yes","no","café \"x\""])");
    CHECK(read(R"("guided_grammar": "root ::= \"a\"+")") == R"(grammar root ::= "a"+)");
    CHECK(read(R"("guided_json": {"type": "boolean"})") == R"(json_schema {"type":"boolean"})");
    CHECK(read(R"("guided_json": "{\"type\": \"null\"}")") == R"(json_schema {"type":"null"})");
    CHECK(read(R"("structured_outputs": {"regex": "a|b", "disable_any_whitespace": true})") == "regex a|b");
    CHECK(read(R"("structured_outputs": {"choice": ["x"]})") == R"(choice ["x"])");
    CHECK(read(R"("structured_outputs": {"json": {"type": "integer"}, "regex": null})") ==
          R"(json_schema {"type":"integer"})");
    CHECK(read(R"("structured_outputs": {"grammar": "root ::= [a-z]"})") == "grammar root ::= [a-z]");
    CHECK(read(R"("structured_outputs": {"json_object": true})") == "json_object");
    CHECK(read(R"("guided_regex": null, "guided_choice": null)") == "text");
    // response_format "text" beside a constraint changes nothing, in either order.
    CHECK(read(R"("response_format": {"type": "text"}, "guided_regex": "x")") == "regex x");
    CHECK(read(R"("guided_regex": "x", "response_format": {"type": "text"})") == "regex x");
  }
}

TEST_CASE("guided fields: one constraint per line, wrong values and refusals name the field") {
  CHECK(format_plain(R"("response_format": {"type": "json_object"}, "guided_regex": "x")") ==
        "E conflicting_fields: response_format and guided_regex both constrain the output; give one");
  CHECK(format_batch(R"("guided_choice": ["a"], "structured_outputs": {"regex": "a"})") ==
        "E conflicting_fields: body.guided_choice and body.structured_outputs both constrain the output; give one");
  CHECK(format_plain(R"("structured_outputs": {"regex": "a", "choice": ["a"]})") ==
        "E conflicting_fields: structured_outputs.regex and structured_outputs.choice both constrain the output; "
        "give one");
  CHECK(format_plain(R"("guided_choice": [])") == "E invalid_value: guided_choice is an empty list; give at least one choice");
  CHECK(format_plain(R"("guided_choice": ["a", 1])").starts_with("E invalid_type: guided_choice[1] must be a string"));
  CHECK(format_plain(R"("guided_choice": "a")") == "E invalid_type: guided_choice must be a list of strings, got a string");
  CHECK(format_plain(R"("guided_regex": "")") == "E invalid_value: guided_regex must not be empty");
  CHECK(format_plain(R"("guided_regex": "(a")") ==
        "E invalid_value: guided_regex: the regex is malformed at offset 2: a group is not closed; add ')'");
  CHECK(format_batch(R"("guided_regex": "(a)\\1")") ==
        "E unsupported_field: body.guided_regex: the regex uses a backreference (\\1 to \\9) at offset 3, which "
        "structured outputs cannot enforce; rewrite the pattern without it");
  CHECK(format_plain(R"("guided_regex": "a{1000000}")")
            .starts_with("E unsupported_field: guided_regex: the regex repeats a piece of 2 states 1000000 times: "
                         "more than its 262144 automaton states"));
  CHECK(format_plain(R"("guided_grammar": "root ::= b")") ==
        "E invalid_value: guided_grammar: the grammar uses rule 'b' but never defines it; add 'b ::= ...'");
  CHECK(format_plain(R"("structured_outputs": {"whitespace_pattern": " *"})") ==
        "E unsupported_field: structured_outputs.whitespace_pattern is not supported by pagedgen (it reads json, "
        "regex, choice, grammar, json_object, disable_any_whitespace and disable_fallback); remove it");
  CHECK(format_plain(R"("structured_outputs": "regex")").starts_with("E invalid_type: structured_outputs must be an object"));
}

TEST_CASE("a line's guided field wins over the command line's default constraint") {
  SamplingParams defaults;
  defaults.response_format = {ResponseFormat::Type::kRegex, "[0-9]+"};
  CHECK(format_plain(R"("temperature": 0)", defaults) == "regex [0-9]+");
  CHECK(format_plain(R"("guided_choice": ["a"])", defaults) == R"(choice ["a"])");
  CHECK(format_plain(R"("response_format": {"type": "text"})", defaults) == "text");
}
