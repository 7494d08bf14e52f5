// Property test: random walks over the allowed tokens always write JSON that parses
// (simdjson), matches its schema (checked by a small validator written here from the JSON
// Schema rules, not from the grammar), is compact and lists keys in schema order; along
// the way every mask equals trying each token on a copy of the matcher. Several schemas,
// a hand-made vocabulary full of tokens that cross JSON syntax, and the real vocabularies
// of both tokenizer kinds.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "grammar/json_grammar.h"
#include "grammar/token_vocabulary.h"
#include "model/gguf.h"
#include "test_grammar_support.h"
#include "test_paths.h"
#include "tokenizer/tokenizer_loader.h"

namespace pagedgen {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// ---------------------------------------------------------------- the validator
// JSON Schema semantics for the keywords the schemas below use (absent
// additionalProperties allows anything, oneOf means exactly one, ...), plus the fixed
// form: keys of `properties` in schema order, and any other key after them.
class Validator {
 public:
  explicit Validator(element root) : root_(root) {}

  bool valid(element value, element schema, std::string& why) const {
    if (schema.type() == element_type::BOOL) return bool(schema) || (why = "false schema", false);
    const simdjson::dom::object s = schema;
    element k;
    if (s["$ref"].get(k) == simdjson::SUCCESS) {
      element target = root_;
      const std::string_view ref = std::string_view(k).substr(1);
      if (!ref.empty()) REQUIRE(root_.at_pointer(ref).get(target) == simdjson::SUCCESS);
      return valid(value, target, why);
    }
    if (s["allOf"].get(k) == simdjson::SUCCESS) {
      for (const element sub : simdjson::dom::array(k))
        if (!valid(value, sub, why)) return false;
    }
    if (s["anyOf"].get(k) == simdjson::SUCCESS) {
      bool any = false;
      for (const element sub : simdjson::dom::array(k)) any = any || valid(value, sub, why);
      if (!any) return why = "no anyOf alternative", false;
    }
    if (s["oneOf"].get(k) == simdjson::SUCCESS) {
      int matching = 0;
      for (const element sub : simdjson::dom::array(k)) matching += valid(value, sub, why) ? 1 : 0;
      if (matching != 1) return why = "oneOf matched " + std::to_string(matching), false;
    }
    if (s["enum"].get(k) == simdjson::SUCCESS) {
      bool any = false;
      for (const element option : simdjson::dom::array(k))
        any = any || simdjson::minify(option) == simdjson::minify(value);
      if (!any) return why = "not in enum", false;
    }
    if (s["const"].get(k) == simdjson::SUCCESS && simdjson::minify(k) != simdjson::minify(value))
      return why = "not const", false;
    if (s["type"].get(k) == simdjson::SUCCESS) {
      bool any = false;
      if (k.type() == element_type::STRING)
        any = has_type(value, std::string_view(k));
      else
        for (const element t : simdjson::dom::array(k)) any = any || has_type(value, std::string_view(t));
      if (!any) return why = "wrong type", false;
    }
    switch (value.type()) {
      case element_type::OBJECT:
        return valid_object(value, s, why);
      case element_type::ARRAY:
        return valid_array(value, s, why);
      case element_type::STRING:
        return valid_string(value, s, why);
      case element_type::INT64:
      case element_type::UINT64:
      case element_type::DOUBLE:
        return valid_number(value, s, why);
      default:
        return true;
    }
  }

 private:
  static bool has_type(element value, std::string_view type) {
    switch (value.type()) {
      case element_type::NULL_VALUE:
        return type == "null";
      case element_type::BOOL:
        return type == "boolean";
      case element_type::OBJECT:
        return type == "object";
      case element_type::ARRAY:
        return type == "array";
      case element_type::STRING:
        return type == "string";
      case element_type::INT64:
      case element_type::UINT64:
        return type == "integer" || type == "number";
      default:
        return type == "number" || (type == "integer" && std::floor(double(value)) == double(value));
    }
  }

  bool valid_object(simdjson::dom::object value, simdjson::dom::object s, std::string& why) const {
    element properties, additional, required;
    const bool has_properties = s["properties"].get(properties) == simdjson::SUCCESS;
    const bool has_additional = s["additionalProperties"].get(additional) == simdjson::SUCCESS;
    std::vector<std::string_view> order;  // schema order of the listed keys
    if (has_properties)
      for (const auto field : simdjson::dom::object(properties)) order.push_back(field.key);
    size_t last_listed = 0;
    bool seen_other = false;
    for (const auto field : value) {
      const auto listed = std::find(order.begin(), order.end(), field.key);
      element sub;
      if (listed != order.end()) {
        const size_t position = static_cast<size_t>(listed - order.begin()) + 1;
        if (position <= last_listed || seen_other)
          return why = "key out of schema order: " + std::string(field.key), false;
        last_listed = position;
        REQUIRE(simdjson::dom::object(properties)[field.key].get(sub) == simdjson::SUCCESS);
        if (!valid(field.value, sub, why)) return false;
      } else {
        seen_other = true;
        if (has_additional && !valid(field.value, additional, why)) return why = "additional " + why, false;
      }
    }
    if (s["required"].get(required) == simdjson::SUCCESS) {
      element present;
      for (const element name : simdjson::dom::array(required))
        if (value[std::string_view(name)].get(present) != simdjson::SUCCESS) return why = "missing required key", false;
    }
    return true;
  }

  bool valid_array(simdjson::dom::array value, simdjson::dom::object s, std::string& why) const {
    element prefix, items, bound;
    std::vector<element> prefix_schemas;
    if (s["prefixItems"].get(prefix) == simdjson::SUCCESS)
      for (const element sub : simdjson::dom::array(prefix)) prefix_schemas.push_back(sub);
    const bool has_items = s["items"].get(items) == simdjson::SUCCESS;
    size_t i = 0;
    for (const element item : value) {
      if (i < prefix_schemas.size() ? !valid(item, prefix_schemas[i], why) : has_items && !valid(item, items, why))
        return false;
      ++i;
    }
    if (s["minItems"].get(bound) == simdjson::SUCCESS && i < uint64_t(bound)) return why = "too few items", false;
    if (s["maxItems"].get(bound) == simdjson::SUCCESS && i > uint64_t(bound)) return why = "too many items", false;
    return true;
  }

  static bool valid_string(element value, simdjson::dom::object s, std::string& why) {
    size_t code_points = 0;
    for (const char c : std::string_view(value)) code_points += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
    element bound;
    if (s["minLength"].get(bound) == simdjson::SUCCESS && code_points < uint64_t(bound))
      return why = "too short", false;
    if (s["maxLength"].get(bound) == simdjson::SUCCESS && code_points > uint64_t(bound)) return why = "too long", false;
    return true;
  }

  static bool valid_number(element value, simdjson::dom::object s, std::string& why) {
    const auto number = [](element e) {
      return e.type() == element_type::INT64    ? static_cast<long double>(int64_t(e))
             : e.type() == element_type::UINT64 ? static_cast<long double>(uint64_t(e))
                                                : static_cast<long double>(double(e));
    };
    const long double v = number(value);
    element bound;
    if (s["minimum"].get(bound) == simdjson::SUCCESS && v < number(bound)) return why = "below minimum", false;
    if (s["maximum"].get(bound) == simdjson::SUCCESS && v > number(bound)) return why = "above maximum", false;
    if (s["exclusiveMinimum"].get(bound) == simdjson::SUCCESS && v <= number(bound))
      return why = "not above exclusiveMinimum", false;
    if (s["exclusiveMaximum"].get(bound) == simdjson::SUCCESS && v >= number(bound))
      return why = "not below exclusiveMaximum", false;
    return true;
  }

  element root_;
};

// ---------------------------------------------------------------- the walks

constexpr const char* kSchemas[] = {
    // The benchmark's target shape: an object with an array of objects, enums, integers, strings.
    R"({"type": "object", "properties": {
        "id": {"type": "integer", "minimum": 1, "maximum": 500},
        "customer": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                      "tier": {"enum": ["free", "pro", "é€"]}}, "required": ["name", "tier"]},
        "items": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "object", "properties": {
                   "sku": {"type": "string", "minLength": 1, "maxLength": 6}, "qty": {"type": "integer", "minimum": -5, "maximum": 12},
                   "note": {"type": "string", "maxLength": 8}}, "required": ["sku", "qty"]}},
        "gift": {"type": "boolean"}},
      "required": ["id", "customer", "items"]})",
    // Pydantic style: optional fields as anyOf with null, defaults, titles.
    R"({"title": "P", "type": "object", "properties": {"name": {"title": "Name", "type": "string", "maxLength": 10},
        "email": {"anyOf": [{"type": "string", "maxLength": 8}, {"type": "null"}], "default": null},
        "scores": {"type": "array", "items": {"type": "number"}, "maxItems": 4}, "age": {"type": ["integer", "null"]}},
      "required": ["name", "scores"]})",
    // Recursion through $ref, with a depth the walk can close.
    R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer", "minimum": 0, "maximum": 9},
        "kids": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}},
      "$ref": "#/$defs/node"})",
    // Tuples, additional properties with a schema, consts and oneOf with disjoint alternatives.
    R"({"type": "object", "properties": {
        "pair": {"type": "array", "prefixItems": [{"type": "string", "maxLength": 3}, {"const": 42}], "items": {"type": "boolean"}, "minItems": 2, "maxItems": 4},
        "shape": {"oneOf": [{"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "integer", "minimum": 1, "maximum": 99}}, "required": ["kind", "r"], "additionalProperties": false},
                            {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "integer", "minimum": 1, "maximum": 99}}, "required": ["kind", "side"], "additionalProperties": false}]}},
      "required": ["pair", "shape"], "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 3}})",
    // Strings with lengths in code points, escapes and multi-byte characters.
    R"({"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 4}, "minItems": 1, "maxItems": 5})",
    // Any object (json_object mode's language as a schema).
    R"({"type": "object"})",
};

// Every byte, and tokens that cross JSON syntax, split UTF-8 or spell schema keys.
std::vector<std::string> mixed_vocabulary() {
  std::vector<std::string> texts = test::byte_vocabulary();  // 0..255, then <eos>
  for (const char* t : {"{\"",
                        "\":",
                        "\":\"",
                        "\",",
                        "\",\"",
                        "\"}",
                        "\"]",
                        "\"]}",
                        "},",
                        "},{\"",
                        "]}",
                        "[{\"",
                        "[\"",
                        "true",
                        "false",
                        "null",
                        "0",
                        "12",
                        "-3",
                        ".5",
                        "e+",
                        "E-",
                        "\xC3\xA9",
                        "\xE2\x82\xAC",
                        "\xF0\x9F",
                        "\x98\x80",
                        "\\u00",
                        "\\n",
                        "\\\"",
                        " the",
                        "abc",
                        "name",
                        "\"name\":\"",
                        "id",
                        "\":1",
                        "items",
                        "\"items\":[{\"",
                        "kids",
                        "\"kids\":[",
                        "sku",
                        "qty",
                        "\":[",
                        "}]}",
                        "\",\"tier\":\"",
                        "kind",
                        "circle",
                        "square",
                        "\"shape\":{\"kind\":\"",
                        "42,",
                        "42]",
                        ",true",
                        "null}",
                        "null,",
                        "\"v\":",
                        "pro\"}",
                        "x\"}]"}) {
    texts.emplace_back(t);
  }
  return texts;
}

// Closing tokens weigh more, so that walks finish; end-of-generation most.
double weight(const std::string& text, bool is_end) {
  if (is_end) return 50;
  return text.find_first_of("\"}]") != std::string::npos ? 6 : 1;
}

struct WalkStats {
  int finished = 0;
  int cut = 0;  // ran out of steps (the max_tokens case): not checked as a value
};

void random_walks(const std::shared_ptr<const CompiledGrammar>& grammar, const char* schema_text, int num_walks,
                  size_t max_steps, bool check_brute_force, uint64_t seed, WalkStats& stats) {
  simdjson::dom::parser schema_parser;
  const element schema = schema_parser.parse(std::string(schema_text));
  const Validator validator(schema);
  const TokenVocabulary& vocabulary = grammar->vocabulary();
  std::mt19937_64 rng(seed);
  for (int walk = 0; walk < num_walks; ++walk) {
    GrammarMatcher matcher(grammar);
    std::string text;
    bool ended = false;
    for (size_t step = 0; step < max_steps && !ended; ++step) {
      const std::vector<TokenId> allowed = test::allowed_ids(matcher);
      if (check_brute_force) REQUIRE(allowed == test::brute_force_ids(matcher));
      REQUIRE_FALSE(allowed.empty());  // never a dead end
      std::vector<double> weights;
      for (const TokenId id : allowed) {
        weights.push_back(weight(vocabulary.bytes_by_id[static_cast<size_t>(id)],
                                 vocabulary.bytes_by_id[static_cast<size_t>(id)].empty()));
      }
      const TokenId token = allowed[std::discrete_distribution<size_t>(weights.begin(), weights.end())(rng)];
      REQUIRE(matcher.accept_token(token));
      ended = matcher.is_terminated();
      text += vocabulary.bytes_by_id[static_cast<size_t>(token)];
    }
    if (!ended) {
      ++stats.cut;
      continue;
    }
    ++stats.finished;
    CAPTURE(text);
    simdjson::dom::parser parser;
    element value;
    REQUIRE(parser.parse(text).get(value) == simdjson::SUCCESS);
    std::string why;
    CHECK_MESSAGE(validator.valid(value, schema, why), why);
    // Compact: removing whitespace outside strings changes nothing.
    std::string minified(text.size(), '\0');
    size_t minified_size = 0;
    REQUIRE(simdjson::minify(text.data(), text.size(), minified.data(), minified_size) == simdjson::SUCCESS);
    CHECK(std::string_view(minified.data(), minified_size) == text);
  }
}

TEST_CASE("random walks on a vocabulary of syntax-crossing tokens: valid, compact, schema-ordered JSON") {
  const std::vector<std::string> vocab = mixed_vocabulary();
  uint64_t seed = 1;
  for (const char* schema : kSchemas) {
    const std::string schema_text = schema;
    CAPTURE(schema_text);
    const auto grammar = test::compile_for(json_schema_grammar(schema), vocab);
    WalkStats stats;
    random_walks(grammar, schema, 40, 600, true, seed++, stats);
    CHECK(stats.finished >= 30);
  }
  const auto object = test::compile_for(json_object_grammar(), vocab);
  WalkStats stats;
  random_walks(object, R"({"type": "object"})", 40, 600, true, 99, stats);
  CHECK(stats.finished >= 30);
}

TEST_CASE("random walks on real vocabularies of both tokenizer kinds") {
  for (const std::string file : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"}) {
    CAPTURE(file);
    const std::filesystem::path path = test::shared_dir() / "tokenizer-vectors" / file;
    if (!std::filesystem::exists(path)) {
      MESSAGE("skipped: ", path.string(), " is absent");
      continue;
    }
    const auto trie = std::make_shared<const TokenTrie>(token_vocabulary(*load_tokenizer(GgufFile(path))));
    uint64_t seed = 7;
    for (const char* schema : kSchemas) {
      const std::string schema_text = schema;
      CAPTURE(schema_text);
      const auto grammar = std::make_shared<const CompiledGrammar>(json_schema_grammar(schema), trie);
      WalkStats stats;
      random_walks(grammar, schema, 6, 800, false, seed++, stats);
      CHECK(stats.finished >= 3);
    }
  }
}

}  // namespace
}  // namespace pagedgen
