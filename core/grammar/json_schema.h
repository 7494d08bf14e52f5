// JSON Schema as structured outputs compile it: the text read and checked keyword by
// keyword into a graph of Schema nodes (a recursive $ref is an edge back to a node).
// Keywords that would constrain the value in ways the grammar cannot follow (format,
// not, uniqueItems, ...) are refused with an UnsupportedSchemaError
// (grammar_error.h) naming the keyword and where it is; annotations (title, description, default, ...) and unknown
// keywords are ignored, as a validator ignores them.
//
// Where the schema leaves a choice, the generated language is a subset of what it admits
// (so every output still validates):
//   - an object lists `properties` in schema order; without additionalProperties, only the
//     listed keys appear, unless the object lists none (then any keys may);
//   - additional keys come after the listed ones, never repeat a listed key, and have no
//     escape sequences;
//   - integers stay within 64 bits, numbers have a 64-bit integer part and an exponent of
//     at most two digits, so every output reads as a 64-bit integer or a finite double.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/stop_token.h"

namespace pagedgen {

using SchemaId = uint32_t;  // index into JsonSchema::schemas

// JSON value types as bits; integer values also have kNumber's type.
enum JsonTypeBit : uint8_t {
  kJsonNull = 1,
  kJsonBoolean = 2,
  kJsonObject = 4,
  kJsonArray = 8,
  kJsonString = 16,
  kJsonNumber = 32,
  kJsonInteger = 64,
};
inline constexpr uint8_t kAllJsonTypes = 127;

struct SchemaProperty {
  std::string name;  // unescaped key
  SchemaId schema;
  bool required;
};

struct Schema {
  enum class Kind {
    kAny,       // any JSON value (`true`, `{}`)
    kNothing,   // no value (`false`)
    kRef,       // exactly the values of `ref` ($ref, or allOf with one schema)
    kAnyOf,     // the values of any of `alternatives` (anyOf, oneOf)
    kLiterals,  // one of `literals` (enum, const)
    kTyped,     // a value of one of `types`, with the constraints below
  };
  Kind kind = Kind::kAny;
  std::string location;  // "#/properties/tags/items", for messages

  SchemaId ref = 0;
  std::vector<SchemaId> alternatives;
  std::vector<std::string> literals;  // compact JSON texts, distinct

  uint8_t types = kAllJsonTypes;  // JsonTypeBit set
  // Objects.
  std::vector<SchemaProperty> properties;         // schema order
  std::optional<SchemaId> additional_properties;  // nullopt: no keys beyond properties
  // Arrays: item i follows prefix_items[i], then `items`.
  std::vector<SchemaId> prefix_items;
  std::optional<SchemaId> items;  // nullopt: no items after the prefix
  uint64_t min_items = 0;
  std::optional<uint64_t> max_items;
  // Strings: lengths in Unicode code points, as JSON Schema counts them.
  uint64_t min_length = 0;
  std::optional<uint64_t> max_length;
  std::optional<std::string> pattern;  // an ECMA-262 regex the decoded value contains a match of
  // Integers (inclusive).
  std::optional<int64_t> minimum;
  std::optional<int64_t> maximum;
};

struct JsonSchema {
  std::vector<Schema> schemas;
  SchemaId root = 0;
};

// Throws Error for text that is not JSON, a schema that is not an object or boolean or a
// malformed keyword value; UnsupportedSchemaError for a refused keyword or form (a $ref
// that is not a local JSON pointer, a bound on a non-integer, ...). Stopped when `stop`
// asks (read every few thousand schema nodes).
JsonSchema parse_json_schema(std::string_view text, const StopToken& stop = {});

}  // namespace pagedgen
