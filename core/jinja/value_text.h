// Values as text, as Python prints them: str() for {{ x }} and the string filter, repr()
// inside lists and dicts ("['a', 1, None]", "{'k': True}"), floats as "1.0", "1e-05".
#pragma once

#include <string>

#include "jinja/value.h"

namespace pagedgen::jinja {

std::string to_text(const Value& value);  // str(value); Undefined is ''
std::string repr(const Value& value);
std::string float_repr(double value);
// markupsafe's escape: & < > " ' as entities (&#34; and &#39; for the quotes).
std::string markup_escape(std::string_view text);
// Python's repr of a str: quoted, with escapes for what is not printable.
void append_string_repr(std::string& out, const std::string& text);

}  // namespace pagedgen::jinja
