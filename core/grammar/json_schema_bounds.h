// Keyword values that are numbers, read for the grammar: counts (minItems, maxLength, ...)
// and integer bounds (minimum, exclusiveMaximum, ...) rounded to the integers they allow
// and kept within 64 bits. Errors name the keyword and the schema's location.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace pagedgen {

// A non-negative integer (2.0 counts as 2). Throws Error otherwise.
uint64_t read_count(simdjson::dom::element value, const std::string& location, std::string_view keyword);

// The least int64 >= value (> value when exclusive); a value below int64 gives its least.
// Throws Error when no int64 is that large, or the value is no number.
int64_t integer_lower_bound(simdjson::dom::element value, bool exclusive, const std::string& location,
                            std::string_view keyword);

// The greatest int64 <= value (< value when exclusive); a value above int64 gives its greatest.
int64_t integer_upper_bound(simdjson::dom::element value, bool exclusive, const std::string& location,
                            std::string_view keyword);

}  // namespace pagedgen
