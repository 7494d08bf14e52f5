// The keyword tables and the shape checks of their values (see json_schema_keywords.h).
#include "grammar/json_schema_keywords.h"

#include <algorithm>
#include <cmath>

#include "grammar/grammar_error.h"
#include "grammar/json_schema.h"
#include "grammar/json_schema_bounds.h"
#include "util/error.h"

namespace pagedgen {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// The keyword tables keep their hand-made columns.
// clang-format off
// Keywords that constrain values in ways the grammar does not follow.
constexpr std::array<std::string_view, 21> kRefusedKeywords = {
    "format",          "patternProperties", "propertyNames",  "minProperties",
    "maxProperties", "dependentRequired", "dependentSchemas", "dependencies",  "uniqueItems",
    "contains",     "minContains",     "maxContains",       "unevaluatedItems", "unevaluatedProperties",
    "multipleOf",   "not",             "if",                "then",           "else",
    "$dynamicRef",  "$recursiveRef",
};

constexpr std::array<std::string_view, kNumSchemaKeywords> kKeywordNames = {
    "type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "properties", "required",
    "additionalProperties", "items", "prefixItems", "additionalItems", "minItems", "maxItems",
    "minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
};
// clang-format on

uint8_t type_bit(std::string_view name, const std::string& location) {
  if (name == "null") return kJsonNull;
  if (name == "boolean") return kJsonBoolean;
  if (name == "object") return kJsonObject;
  if (name == "array") return kJsonArray;
  if (name == "string") return kJsonString;
  if (name == "number") return kJsonNumber;
  if (name == "integer") return kJsonInteger;
  fail("{}: unknown type '{}' (types are null, boolean, object, array, string, number, integer)", location, name);
}

bool is_number(element value) {
  const element_type type = value.type();
  return type == element_type::INT64 || type == element_type::UINT64 || type == element_type::DOUBLE;
}

bool is_schema(element value) { return value.type() == element_type::OBJECT || value.type() == element_type::BOOL; }

// Throws Error when `keyword`'s value has the wrong shape; subschemas are checked when read.
void check_value(SchemaKeyword keyword, element value, const std::string& at) {
  const std::string_view name = keyword_name(keyword);
  const auto require = [&](bool ok, std::string_view what) {
    if (!ok) fail("{}: '{}' must be {}, not {}", at, name, what, json_type_name(value));
  };
  switch (keyword) {
    case kType:
      read_types(value, at);
      return;
    case kEnum:
      return require(value.type() == element_type::ARRAY, "an array");
    case kAnyOf:
    case kOneOf:
    case kAllOf:
    case kPrefixItems:
      return require(value.type() == element_type::ARRAY, "an array of schemas");
    case kRef:
    case kPattern:
      return require(value.type() == element_type::STRING, "a string");
    case kProperties:
      return require(value.type() == element_type::OBJECT, "an object");
    case kRequired:
      require(value.type() == element_type::ARRAY, "an array of strings");
      for (const element item : simdjson::dom::array(value))
        if (item.type() != element_type::STRING) fail("{}: 'required' must be an array of strings", at);
      return;
    case kAdditionalProperties:
    case kAdditionalItems:
      return require(is_schema(value), "a schema (an object or a boolean)");
    case kItems:
      return require(is_schema(value) || value.type() == element_type::ARRAY, "a schema or an array of schemas");
    case kMinItems:
    case kMaxItems:
    case kMinLength:
    case kMaxLength:
      read_count(value, at, name);
      return;
    case kMinimum:
    case kMaximum:
      return require(is_number(value), "a number");
    case kExclusiveMinimum:
    case kExclusiveMaximum:  // draft 4 writes a boolean beside minimum/maximum
      return require(is_number(value) || value.type() == element_type::BOOL, "a number");
    case kConst:
    case kNumSchemaKeywords:
      return;
  }
}

}  // namespace

std::string_view keyword_name(SchemaKeyword keyword) { return kKeywordNames[keyword]; }

SchemaKeywords read_schema_keywords(element object, const std::string& location, bool is_root) {
  SchemaKeywords keywords;
  for (const auto field : simdjson::dom::object(object)) {
    if (std::ranges::find(kRefusedKeywords, field.key) != kRefusedKeywords.end()) {
      refuse_schema(
          "{}: '{}' is not supported by structured outputs (the grammar cannot enforce it); remove it from the "
          "schema",
          location, field.key);
    }
    if (field.key == "$id" && !is_root) {
      refuse_schema("{}: '$id' inside a schema is not supported (it changes where $ref points); remove it", location);
    }
    const auto known = std::ranges::find(kKeywordNames, field.key);
    if (known != kKeywordNames.end()) keywords[static_cast<std::size_t>(known - kKeywordNames.begin())] = field.value;
  }
  for (std::size_t k = 0; k < kNumSchemaKeywords; ++k)
    if (keywords[k]) check_value(static_cast<SchemaKeyword>(k), *keywords[k], location);
  return keywords;
}

std::string_view json_type_name(element value) {
  switch (value.type()) {
    case element_type::ARRAY:
      return "an array";
    case element_type::OBJECT:
      return "an object";
    case element_type::STRING:
      return "a string";
    case element_type::BOOL:
      return "a boolean";
    case element_type::NULL_VALUE:
      return "null";
    default:
      return "a number";
  }
}

uint8_t literal_types(element value) {
  switch (value.type()) {
    case element_type::NULL_VALUE:
      return kJsonNull;
    case element_type::BOOL:
      return kJsonBoolean;
    case element_type::OBJECT:
      return kJsonObject;
    case element_type::ARRAY:
      return kJsonArray;
    case element_type::STRING:
      return kJsonString;
    case element_type::INT64:
    case element_type::UINT64:
      return kJsonNumber | kJsonInteger;
    default: {
      const double d = double(value);
      return std::floor(d) == d ? kJsonNumber | kJsonInteger : kJsonNumber;
    }
  }
}

uint8_t read_types(element value, const std::string& location) {
  if (value.type() == element_type::STRING) return type_bit(std::string_view(value), location);
  if (value.type() != element_type::ARRAY) fail("{}: 'type' must be a string or an array of strings", location);
  uint8_t types = 0;
  for (const element item : simdjson::dom::array(value)) {
    if (item.type() != element_type::STRING) fail("{}: 'type' must be a string or an array of strings", location);
    types |= type_bit(std::string_view(item), location);
  }
  if (types == 0) fail("{}: 'type' lists no type: no value satisfies the schema", location);
  return types;
}

}  // namespace pagedgen
