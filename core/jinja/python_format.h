// Python's string formatting as templates use it: `"%s: %d" % (a, b)`, `"{} {name}".format(
// ...)`, and str.replace's counting rules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "jinja/value.h"

namespace pagedgen::jinja {

// text % values (values: a tuple/list for several, a dict for %(name)s, else one value).
std::string python_percent_format(Interpreter& interpreter, std::string_view text, const Value& values);
std::string python_str_format(Interpreter& interpreter, std::string_view text, const CallArgs& args);
// str.replace(old, new, count); count < 0: all.
std::string python_replace(std::string_view text, std::string_view old_text, std::string_view new_text,
                           std::int64_t count);

}  // namespace pagedgen::jinja
