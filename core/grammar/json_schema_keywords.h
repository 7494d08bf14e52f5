// The JSON Schema keywords structured outputs know: those they refuse (the grammar cannot
// enforce them), those they apply, and the checks every applied keyword's value gets
// whatever the schema's type (a malformed value is an error even where the keyword would
// not apply, as a validator that checks the schema against its meta-schema says).
#pragma once

#include <simdjson.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pagedgen {

// The keywords applied; anything else is an annotation or unknown, and ignored.
enum SchemaKeyword : std::size_t {
  kType,
  kEnum,
  kConst,
  kAnyOf,
  kOneOf,
  kAllOf,
  kRef,
  kProperties,
  kRequired,
  kAdditionalProperties,
  kItems,
  kPrefixItems,
  kAdditionalItems,
  kMinItems,
  kMaxItems,
  kMinLength,
  kMaxLength,
  kPattern,
  kMinimum,
  kMaximum,
  kExclusiveMinimum,
  kExclusiveMaximum,
  kNumSchemaKeywords
};

std::string_view keyword_name(SchemaKeyword keyword);

// One schema object's applied keywords, each with its value where present.
using SchemaKeywords = std::array<std::optional<simdjson::dom::element>, kNumSchemaKeywords>;

// The keywords of the schema object `object` at `location` ("#/properties/a"), their values
// checked. Throws UnsupportedSchemaError for a refused keyword or an `$id` below the root
// (`is_root` false), and Error for a value of the wrong shape: a count that is not a
// non-negative integer, a bound that is not a number, a subschema that is not an object or
// a boolean, a list that is not an array, a `type` that names no type.
SchemaKeywords read_schema_keywords(simdjson::dom::element object, const std::string& location, bool is_root);

// "an array", "a string", ...: a value's JSON type for messages.
std::string_view json_type_name(simdjson::dom::element value);

// The JsonTypeBit set a literal value belongs to (an integral number is an integer and a number).
uint8_t literal_types(simdjson::dom::element value);

// The JsonTypeBit set of a `type` keyword's value (a string or an array of strings). Throws
// Error naming the location for anything else, an unknown name, or an empty list.
uint8_t read_types(simdjson::dom::element value, const std::string& location);

}  // namespace pagedgen
