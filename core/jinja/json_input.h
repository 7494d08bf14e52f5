// JSON text -> template values: objects become dicts in their key order, integers ints,
// other numbers floats (as Python's json.loads reads them).
#pragma once

#include <string_view>

#include "jinja/value.h"

namespace pagedgen::jinja {

// Fails (Failure) on text that is not JSON or nests deeper than kMaxValueDepth.
Value parse_json_value(std::string_view text);

}  // namespace pagedgen::jinja
