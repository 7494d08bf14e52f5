// JSON Schema to grammar: which texts each keyword admits (fed byte by byte, one token per
// byte), the fixed compact form and key order, recursion through $ref, and the refusal of
// what the grammar cannot enforce, with messages that name the keyword and its place.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>

#include "grammar/grammar_error.h"
#include "grammar/json_grammar.h"
#include "test_grammar_support.h"
#include "util/error.h"

namespace pagedgen {
namespace {

using test::byte_matches;

std::shared_ptr<const CompiledGrammar> schema(std::string_view text) {
  return test::compile_for(json_schema_grammar(text), test::byte_vocabulary());
}

std::string schema_refusal(std::string_view text) {
  try {
    (void)json_schema_grammar(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST_CASE("primitive types in compact form") {
  const auto null = schema(R"({"type": "null"})");
  CHECK(byte_matches(null, "null"));
  CHECK_FALSE(byte_matches(null, " null"));
  CHECK_FALSE(byte_matches(null, "nul"));

  const auto boolean = schema(R"({"type": "boolean"})");
  CHECK(byte_matches(boolean, "true"));
  CHECK(byte_matches(boolean, "false"));
  CHECK_FALSE(byte_matches(boolean, "True"));

  const auto number = schema(R"({"type": "number"})");
  for (const char* ok : {"0", "-0", "12", "-3.25", "-0.5", "1e5", "1E+5", "2.5e-3", "0.0", "1e99",
                         "-9223372036854775808.5e-99", "9223372036854775807", "0.12345678901234567890123"}) {
    CHECK_MESSAGE(byte_matches(number, ok), ok);
  }
  // Beyond what parsers read exactly: a bare integer past 64 bits, an exponent of 3 digits.
  for (const char* bad :
       {"01", "+1", ".5", "1.", "1e", "--1", "1.5.2", " 1", "9223372036854775808", "1e100", "1e-100", "-0e"}) {
    CHECK_MESSAGE(!byte_matches(number, bad), bad);
  }

  const auto integer = schema(R"({"type": "integer"})");
  for (const char* ok : {"0", "7", "-12", "9223372036854775807", "-9223372036854775808"})
    CHECK_MESSAGE(byte_matches(integer, ok), ok);
  for (const char* bad :
       {"1.0", "01", "-0", "1e3", "-", "9223372036854775808", "-9223372036854775809", "10000000000000000000"}) {
    CHECK_MESSAGE(!byte_matches(integer, bad), bad);
  }
}

TEST_CASE("integer bounds are exact at every value") {
  const auto range = schema(R"({"type": "integer", "minimum": -130, "maximum": 245})");
  for (int v = -1000; v <= 1000; ++v)
    CHECK_MESSAGE(byte_matches(range, std::to_string(v)) == (v >= -130 && v <= 245), v);
  CHECK_FALSE(byte_matches(range, "-0"));
  CHECK_FALSE(byte_matches(range, "0245"));

  const auto exclusive = schema(R"({"type": "integer", "exclusiveMinimum": 9, "exclusiveMaximum": 100.5})");
  for (int v = -20; v <= 200; ++v) CHECK_MESSAGE(byte_matches(exclusive, std::to_string(v)) == (v > 9 && v <= 100), v);

  const auto at_least = schema(R"({"type": "integer", "minimum": 95})");
  for (int v = -200; v <= 2000; ++v) CHECK_MESSAGE(byte_matches(at_least, std::to_string(v)) == (v >= 95), v);
  CHECK(byte_matches(at_least, "9223372036854775807"));
  CHECK_FALSE(byte_matches(at_least, "9223372036854775808"));  // integers stay within 64 bits

  const auto negative = schema(R"({"type": "integer", "maximum": -7})");
  for (int v = -2000; v <= 200; ++v) CHECK_MESSAGE(byte_matches(negative, std::to_string(v)) == (v <= -7), v);
  CHECK(byte_matches(negative, "-9223372036854775808"));
  CHECK_FALSE(byte_matches(negative, "-9223372036854775809"));

  const auto extremes =
      schema(R"({"type": "integer", "minimum": -9223372036854775808, "maximum": 9223372036854775807})");
  CHECK(byte_matches(extremes, "-9223372036854775808"));
  CHECK(byte_matches(extremes, "9223372036854775807"));
  CHECK_FALSE(byte_matches(extremes, "-9223372036854775809"));
  CHECK_FALSE(byte_matches(extremes, "9223372036854775808"));
}

TEST_CASE("strings: escapes, control characters, UTF-8 and lengths in code points") {
  const auto any = schema(R"({"type": "string"})");
  for (const char* ok : {R"("")", R"("a b")", R"("\"\\\/\b\f\n\r\t")", R"("\u00e9\uD7FF\uE000")",
                         "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"", "\"\x7F\""}) {
    CHECK_MESSAGE(byte_matches(any, ok), ok);
  }
  for (const char* bad : {R"("\x")", R"("\ud800")", R"("\uDFFF")", "\"\n\"", "\"\xC0\xAF\"", "\"\xE0\x80\xAF\"",
                          "\"\xED\xA0\x80\"", "\"\xF4\x90\x80\x80\"", "\"\xC3\"", "\"\x80\"", R"("abc)", R"("a"b")"}) {
    CHECK_MESSAGE(!byte_matches(any, bad), bad);
  }
  const auto bounded = schema(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  CHECK_FALSE(byte_matches(bounded, R"("a")"));
  CHECK(byte_matches(bounded, R"("ab")"));
  CHECK(byte_matches(bounded, "\"\xC3\xA9\\n\xF0\x9F\x98\x80\""));  // three code points, 8 bytes
  CHECK(byte_matches(bounded, R"("\u0041bc")"));
  CHECK_FALSE(byte_matches(bounded, R"("abcd")"));
}

TEST_CASE("objects: schema order, required and optional keys, additional properties") {
  const auto person = schema(R"({"type": "object",
      "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "nick": {"type": "string"}},
      "required": ["name"]})");
  CHECK(byte_matches(person, R"({"name":"Ann"})"));
  CHECK(byte_matches(person, R"({"name":"Ann","age":3})"));
  CHECK(byte_matches(person, R"({"name":"Ann","nick":"A"})"));
  CHECK(byte_matches(person, R"({"name":"Ann","age":3,"nick":"A"})"));
  CHECK_FALSE(byte_matches(person, R"({"age":3,"name":"Ann"})"));    // schema order
  CHECK_FALSE(byte_matches(person, R"({"age":3})"));                 // name is required
  CHECK_FALSE(byte_matches(person, R"({"name": "Ann"})"));           // compact
  CHECK_FALSE(byte_matches(person, R"({"name":"Ann","other":1})"));  // no additionalProperties: listed keys only
  CHECK_FALSE(byte_matches(person, R"({"name":"Ann","name":"Bo"})"));

  const auto open = schema(R"({"type": "object", "properties": {"id": {"type": "integer"}},
      "required": ["id"], "additionalProperties": {"type": "boolean"}})");
  CHECK(byte_matches(open, R"({"id":1})"));
  CHECK(byte_matches(open, R"({"id":1,"x":true,"id2":false})"));
  CHECK_FALSE(byte_matches(open, R"({"id":1,"id":true})"));  // an additional key never repeats a listed one
  CHECK_FALSE(byte_matches(open, R"({"id":1,"x":2})"));
  CHECK_FALSE(byte_matches(open, R"({"x":true,"id":1})"));
  CHECK_FALSE(byte_matches(open, R"({"id":1,"\u0069d":true})"));  // additional keys have no escapes

  const auto closed = schema(R"({"type": "object", "properties": {"a": {"const": 1}}, "additionalProperties": false})");
  CHECK(byte_matches(closed, "{}"));
  CHECK(byte_matches(closed, R"({"a":1})"));
  CHECK_FALSE(byte_matches(closed, R"({"b":1})"));

  const auto bare = schema(R"({"type": "object"})");
  CHECK(byte_matches(bare, R"({"k":[1,{"n":null}],"e":"\u00e9"})"));
  CHECK_FALSE(byte_matches(bare, "[]"));

  const auto undescribed =
      schema(R"({"type": "object", "properties": {"a": {"type": "null"}}, "required": ["a", "b"]})");
  CHECK(byte_matches(undescribed, R"({"a":null,"b":[true]})"));
  CHECK_FALSE(byte_matches(undescribed, R"({"a":null})"));

  const auto escaped_key =
      schema(R"({"type": "object", "properties": {"say \"hi\"/é": {"type": "null"}}, "required": ["say \"hi\"/é"]})");
  CHECK(byte_matches(escaped_key, "{\"say \\\"hi\\\"/\xC3\xA9\":null}"));
}

TEST_CASE("arrays: items, prefixItems, minItems and maxItems") {
  const auto list = schema(R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})");
  CHECK_FALSE(byte_matches(list, "[]"));
  CHECK(byte_matches(list, "[1]"));
  CHECK(byte_matches(list, "[1,2,3]"));
  CHECK_FALSE(byte_matches(list, "[1,2,3,4]"));
  CHECK_FALSE(byte_matches(list, "[1, 2]"));
  CHECK_FALSE(byte_matches(list, "[1,]"));

  const auto tuple =
      schema(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": false})");
  CHECK(byte_matches(tuple, "[]"));
  CHECK(byte_matches(tuple, R"(["a"])"));
  CHECK(byte_matches(tuple, R"(["a",true])"));
  CHECK_FALSE(byte_matches(tuple, R"(["a",true,1])"));
  CHECK_FALSE(byte_matches(tuple, R"([true])"));

  const auto tuple_then_items =
      schema(R"({"type": "array", "prefixItems": [{"type": "null"}], "items": {"type": "integer"}, "minItems": 3})");
  CHECK_FALSE(byte_matches(tuple_then_items, "[null,1]"));
  CHECK(byte_matches(tuple_then_items, "[null,1,2]"));
  CHECK(byte_matches(tuple_then_items, "[null,1,2,3,4,5]"));
  CHECK_FALSE(byte_matches(tuple_then_items, "[1,1,2]"));

  const auto draft7_tuple =
      schema(R"({"type": "array", "items": [{"type": "null"}], "additionalItems": {"type": "boolean"}})");
  CHECK(byte_matches(draft7_tuple, "[null,true,false]"));
  CHECK_FALSE(byte_matches(draft7_tuple, "[null,1]"));

  const auto anything = schema(R"({"type": "array"})");
  CHECK(byte_matches(anything, R"([1,"a",[],{}])"));
}

TEST_CASE("enum, const, type lists, anyOf and oneOf") {
  const auto colors = schema(R"({"enum": ["red", "green", "gr", 3, null, {"a": [1, 2]}]})");
  for (const char* ok : {R"("red")", R"("green")", R"("gr")", "3", "null", R"({"a":[1,2]})"})
    CHECK_MESSAGE(byte_matches(colors, ok), ok);
  for (const char* bad : {R"("gre")", R"("blue")", "4", R"({"a": [1,2]})"})
    CHECK_MESSAGE(!byte_matches(colors, bad), bad);

  const auto typed_enum = schema(R"({"type": "string", "enum": ["a", 1, "b"]})");
  CHECK(byte_matches(typed_enum, R"("a")"));
  CHECK_FALSE(byte_matches(typed_enum, "1"));

  const auto constant = schema(R"({"const": "x\ny"})");
  CHECK(byte_matches(constant, R"("x\ny")"));

  const auto nullable = schema(R"({"type": ["string", "null"], "maxLength": 1})");
  CHECK(byte_matches(nullable, "null"));
  CHECK(byte_matches(nullable, R"("a")"));
  CHECK_FALSE(byte_matches(nullable, R"("ab")"));

  const auto either =
      schema(R"({"anyOf": [{"type": "integer", "minimum": 10}, {"type": "string", "maxLength": 1}, {"const": true}]})");
  CHECK(byte_matches(either, "12"));
  CHECK_FALSE(byte_matches(either, "9"));
  CHECK(byte_matches(either, R"("z")"));
  CHECK(byte_matches(either, "true"));
  CHECK_FALSE(byte_matches(either, "false"));

  const auto one =
      schema(R"({"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]},
                                         {"type": "object", "properties": {"kind": {"const": "b"}, "n": {"type": "integer"}}, "required": ["kind", "n"]}]})");
  CHECK(byte_matches(one, R"({"kind":"a"})"));
  CHECK(byte_matches(one, R"({"kind":"b","n":1})"));
  CHECK_FALSE(byte_matches(one, R"({"kind":"b"})"));

  const auto anything = schema("true");
  CHECK(byte_matches(anything, R"([{"a":-1.5e3},"\u0000",false])"));
  const auto empty_schema = schema("{}");
  CHECK(byte_matches(empty_schema, "null"));
}

TEST_CASE("$ref and $defs, recursion included") {
  const auto tree = schema(R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
      "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["v", "kids"]}}})");
  CHECK(byte_matches(tree, R"({"v":1,"kids":[]})"));
  CHECK(
      byte_matches(tree, R"({"v":1,"kids":[{"v":2,"kids":[{"v":3,"kids":[{"v":4,"kids":[]}]}]},{"v":5,"kids":[]}]})"));
  CHECK_FALSE(byte_matches(tree, R"({"v":1,"kids":[{"v":2}]})"));
  CHECK_FALSE(byte_matches(tree, R"({"v":1,"kids":[{"v":2,"kids":[]}])"));

  const auto root_recursion = schema(R"({"type": "array", "items": {"$ref": "#"}, "maxItems": 2})");
  CHECK(byte_matches(root_recursion, "[[],[[[]]]]"));
  CHECK_FALSE(byte_matches(root_recursion, "[[],[],[]]"));

  const auto linked = schema(R"({"definitions": {"list": {"anyOf": [{"type": "null"},
      {"type": "object", "properties": {"head": {"type": "string"}, "tail": {"$ref": "#/definitions/list"}}, "required": ["head", "tail"]}]}},
      "allOf": [{"$ref": "#/definitions/list"}]})");
  CHECK(byte_matches(linked, R"({"head":"a","tail":{"head":"b","tail":null}})"));
  CHECK_FALSE(byte_matches(linked, R"({"head":"a"})"));

  const auto pointer_escapes =
      schema(R"({"$defs": {"a/b": {"type": "null"}, "c~d": {"type": "boolean"}, "e f": {"const": 1}},
      "type": "array", "prefixItems": [{"$ref": "#/$defs/a~1b"}, {"$ref": "#/$defs/c~0d"}, {"$ref": "#/$defs/e%20f"}], "items": false})");
  CHECK(byte_matches(pointer_escapes, "[null,true,1]"));
}

TEST_CASE("refused keywords and schemas name the keyword and where it is") {
  CHECK(schema_refusal(R"({"type": "object", "properties": {"id": {"type": "string", "pattern": "^(a)\\1$"}}})") ==
        "#/properties/id: 'pattern' is not supported here: the regex uses a backreference (\\1 to \\9) at offset 4, "
        "which structured outputs cannot enforce; rewrite the pattern without it");
  CHECK(schema_refusal(R"({"type": "string", "pattern": "(a"})") ==
        "#: 'pattern' is malformed: the regex is malformed at offset 2: a group is not closed; add ')'");
  CHECK(schema_refusal(R"({"type": "string", "format": "date-time"})").starts_with("#: 'format' is not supported"));
  for (const char* keyword : {"uniqueItems", "not", "multipleOf", "patternProperties", "if", "minProperties"}) {
    CHECK_MESSAGE(schema_refusal(fmt::format(R"({{"items": {{"{}": true}}}})", keyword))
                      .starts_with(fmt::format("#/items: '{}'", keyword)),
                  keyword);
  }
  CHECK(schema_refusal(R"({"type": "number", "minimum": 0})").starts_with("#: 'minimum' is supported for integers only"));
  CHECK(schema_refusal(R"({"$ref": "other.json#/a"})").starts_with("#: $ref 'other.json#/a' is not supported"));
  CHECK(schema_refusal(R"({"$ref": "#/$defs/missing"})") == "#: $ref '#/$defs/missing' points to nothing in the schema");
  CHECK(schema_refusal(R"({"$ref": "#node"})").starts_with("#: $ref '#node' names an anchor"));
  CHECK(schema_refusal(R"({"$ref": "#/$defs/a", "type": "object", "$defs": {"a": {}}})")
            .starts_with("#: 'type' beside '$ref' is not supported"));
  CHECK(schema_refusal(R"({"allOf": [{"type": "string"}, {"maxLength": 3}]})")
            .starts_with("#: 'allOf' with 2 schemas is not supported"));
  CHECK(schema_refusal(R"({"type": "string", "minLength": 3, "maxLength": 2})") ==
        "#: minLength 3 is above maxLength 2: no string satisfies the schema");
  CHECK(schema_refusal(R"({"type": "array", "minItems": 3, "maxItems": 2})").starts_with("#: minItems 3 is above maxItems 2"));
  CHECK(schema_refusal(R"({"type": "integer", "minimum": 5, "maximum": 4})")
            .starts_with("#: the integer bounds leave no value"));
  CHECK(schema_refusal(R"({"type": "integer", "enum": ["a"]})").starts_with("#: 'enum' has no value of the schema's type"));
  CHECK(schema_refusal(R"({"type": "strin"})").starts_with("#: unknown type 'strin'"));
  CHECK(schema_refusal(R"({"type": "object", "properties": {"a": false}, "required": ["a"]})")
            .starts_with("#: no JSON value satisfies the schema"));
  CHECK(schema_refusal(R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})")
            .starts_with("#/$defs/a: $ref leads back to itself"));
  CHECK(schema_refusal(R"({"anyOf": [{"$ref": "#"}, {"type": "null"}]})")
            .starts_with("#: the schema refers back to itself through $ref before"));
  CHECK(
      schema_refusal(
          R"({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"], "additionalProperties": false})")
          .starts_with("#: required property 'b' is not in 'properties' and additionalProperties is false"));
  CHECK(schema_refusal("[1]") == "#: a schema must be an object or a boolean, not an array");
  CHECK(schema_refusal("{").starts_with("the JSON schema is not valid JSON"));
}

// Request readers answer the first kind with unsupported_field, the second with invalid_value.
TEST_CASE("what the engine does not do is UnsupportedSchemaError; a malformed or empty schema a plain Error") {
  const auto is_unsupported = [](std::string_view text) {
    try {
      (void)json_schema_grammar(text);
    } catch (const UnsupportedSchemaError&) {
      return true;
    } catch (const Error&) {
      return false;
    }
    FAIL("accepted: " << text);
    return false;
  };
  for (const char* text :
       {R"({"type": "string", "pattern": "(?=a)b"})", R"({"$ref": "other.json#/a"})", R"({"$ref": "#node"})",
        R"({"$ref": "#/$defs/a", "type": "object", "$defs": {"a": {}}})",
        R"({"allOf": [{"type": "string"}, {"maxLength": 3}]})", R"({"type": "number", "minimum": 0})",
        R"({"items": {"$id": "x"}})", R"({"type": "array", "maxItems": 100000000})",
        R"({"type": "string", "maxLength": 100000000})"}) {
    CHECK_MESSAGE(is_unsupported(text), text);
  }
  for (const char* text : {"{", "[1]", R"({"type": "strin"})", R"({"type": "string", "minLength": 3, "maxLength": 2})",
                           R"({"type": "integer", "enum": ["a"]})", R"({"$ref": "#/$defs/missing"})",
                           R"({"anyOf": [{"$ref": "#"}, {"type": "null"}]})"}) {
    CHECK_MESSAGE(!is_unsupported(text), text);
  }
}

TEST_CASE("a malformed keyword value is an error whatever the type, where the keyword would not apply too") {
  // Each keyword's value is checked before the schema's type picks the keywords it applies.
  CHECK(schema_refusal(R"({"type": "string", "minItems": "3"})") == "#: 'minItems' must be a non-negative integer");
  CHECK(schema_refusal(R"({"type": "string", "minimum": "3"})") == "#: 'minimum' must be a number, not a string");
  CHECK(schema_refusal(R"({"type": "integer", "maxLength": -1})") == "#: 'maxLength' must be a non-negative integer");
  CHECK(schema_refusal(R"({"type": "string", "properties": []})") == "#: 'properties' must be an object, not an array");
  CHECK(schema_refusal(R"({"type": "number", "required": ["a", 1]})") == "#: 'required' must be an array of strings");
  CHECK(schema_refusal(R"({"type": "boolean", "items": 3})") ==
        "#: 'items' must be a schema or an array of schemas, not a number");
  CHECK(schema_refusal(R"({"type": "null", "additionalProperties": "no"})") ==
        "#: 'additionalProperties' must be a schema (an object or a boolean), not a string");
  CHECK(schema_refusal(R"({"type": "object", "prefixItems": {}})") ==
        "#: 'prefixItems' must be an array of schemas, not an object");
  CHECK(schema_refusal(R"({"properties": {"a": {"type": "string", "exclusiveMaximum": null}}})") ==
        "#/properties/a: 'exclusiveMaximum' must be a number, not null");
  // Well-formed values of keywords that do not apply stay ignored.
  CHECK(schema_refusal(R"({"type": "string", "minItems": 3, "minimum": 1.5, "properties": {}, "required": ["a"]})") ==
        "(accepted)");
}

TEST_CASE("annotations and unknown keywords are ignored, as validators ignore them") {
  const auto annotated =
      schema(R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "T", "description": "d",
      "default": 1, "examples": [1], "x-vendor": {"pattern": "ignored inside an unknown keyword"}, "type": "integer"})");
  CHECK(byte_matches(annotated, "5"));
}

TEST_CASE("json_object mode: any object, nested, compact") {
  const auto object = test::compile_for(json_object_grammar(), test::byte_vocabulary());
  CHECK(byte_matches(object, "{}"));
  CHECK(byte_matches(object, R"({"a":{"b":[1,2.5,-3e2,"x",true,false,null,{}]},"":""})"));
  CHECK_FALSE(byte_matches(object, "[]"));
  CHECK_FALSE(byte_matches(object, R"("a")"));
  CHECK_FALSE(byte_matches(object, R"({"a":1,})"));
  CHECK_FALSE(byte_matches(object, R"({"a" :1})"));
}

// `n` $defs entries, each referring to the next (flat in the JSON, as deep as n when read).
std::string def_chain(int n, const std::string& link, const std::string& last) {
  std::string text = R"({"$ref": "#/$defs/d0", "$defs": {)";
  for (int i = 0; i < n; ++i) text += fmt::format(R"("d{}": {}, )", i, fmt::format(fmt::runtime(link), i + 1));
  return text + fmt::format(R"("d{}": {}}}}})", n, last);
}

TEST_CASE("schemas as deep as their size: 100,000 chained $refs, 10,000 nested objects, no recursion") {
  // Each $ref is read and compiled without deepening the stack (they once overflowed it).
  const auto chain = schema(def_chain(100000, R"({{"$ref": "#/$defs/d{}"}})", R"({"type": "string", "maxLength": 3})"));
  CHECK(byte_matches(chain, R"("abc")"));
  CHECK_FALSE(byte_matches(chain, R"("abcd")"));
  const auto nested = schema(
      def_chain(10000, R"({{"type": "object", "properties": {{"a": {{"$ref": "#/$defs/d{}"}}}}, "required": ["a"]}})",
                R"({"type": "null"})"));
  std::string deep;
  for (int i = 0; i < 10000; ++i) deep += R"({"a":)";
  deep += "null" + std::string(10000, '}');
  CHECK(byte_matches(nested, deep));
  CHECK_FALSE(byte_matches(nested, deep.substr(6)));
  // 100,000 objects in a chain are past the node cap: refused, not a crash.
  CHECK(schema_refusal(def_chain(100000, R"({{"type": "object", "properties": {{"a": {{"$ref": "#/$defs/d{}"}}}}}})",
                          R"({"type": "null"})"))
            .find("automaton states") != std::string::npos);
}

TEST_CASE("$ref chains: shared tails compile, a loop is refused wherever the chain enters it") {
  // Each reference is followed once (fuzz_json_schema found a chain of n costing n^2 / 2
  // steps: a 5,000-link chain took seconds in the sanitizer build).
  const auto shared_tail = schema(R"({"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}, {"$ref": "#/$defs/a"}],
      "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/c"}, "c": {"type": "null"}}})");
  CHECK(byte_matches(shared_tail, "null"));
  CHECK(schema_refusal(R"({"$ref": "#/$defs/d0", "$defs": {"d0": {"$ref": "#/$defs/d1"}, "d1": {"$ref": "#/$defs/d2"},
      "d2": {"allOf": [{"$ref": "#/$defs/d1"}]}}})")
            .find("leads back to itself") != std::string::npos);
  CHECK(schema_refusal(def_chain(100000, R"({{"$ref": "#/$defs/d{}"}})", R"({"$ref": "#/$defs/d0"})"))
            .find("leads back to itself") != std::string::npos);
  // The same chain, ending in a value, compiles.
  CHECK(schema_refusal(def_chain(100000, R"({{"$ref": "#/$defs/d{}"}})", R"({"type": "null"})")) == "(accepted)");
}

TEST_CASE("a schema that refers back to itself through a type list builds its rule first") {
  const auto list =
      schema(R"({"type": ["object", "null"], "properties": {"next": {"$ref": "#"}}, "required": ["next"]})");
  CHECK(byte_matches(list, R"({"next":{"next":null}})"));
  CHECK_FALSE(byte_matches(list, R"({"next":{}})"));
}

TEST_CASE("optional keys cost the square of a run of them: past 65,536 key choices the schema is refused") {
  const auto properties = [](int n, bool every_tenth_required) {
    std::string text = R"({"type": "object", "properties": {)";
    std::string required;
    for (int i = 0; i < n; ++i) {
      text += fmt::format(R"({}"p{}": {{"type": "integer"}})", i ? ", " : "", i);
      if (every_tenth_required && i % 10 == 9) required += fmt::format(R"({}"p{}")", required.empty() ? "" : ", ", i);
    }
    return text + "}, \"required\": [" + required + "]}";
  };
  // n optional keys: n (n + 1) / 2 choices. 361: 65,341, within; 362: 65,703, refused.
  CHECK(schema_refusal(properties(361, false)) == "(accepted)");
  CHECK(schema_refusal(properties(362, false)).find("65703 choices of the next key") != std::string::npos);
  bool unsupported = false;
  try {
    (void)json_schema_grammar(properties(100000, false));
  } catch (const UnsupportedSchemaError&) {
    unsupported = true;
  }
  CHECK(unsupported);
  // Runs of ten between required keys: 100,000 properties cost 11 choices each at most.
  CHECK(schema_refusal(properties(10000, true)) == "(accepted)");
}

}  // namespace
}  // namespace pagedgen
