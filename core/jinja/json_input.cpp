// The variables of a render, read with simdjson's DOM (which keeps object key order).
#include "jinja/json_input.h"

#include <simdjson.h>

#include <fmt/format.h>

namespace pagedgen::jinja {

namespace {

Value convert(simdjson::dom::element element, int depth) {
  check_value_depth(depth);
  switch (element.type()) {
    case simdjson::dom::element_type::ARRAY: {
      simdjson::dom::array array;
      if (element.get(array) != simdjson::SUCCESS) fail_render("the variables hold a malformed array");
      List list;
      for (simdjson::dom::element item : array) list.push_back(convert(item, depth + 1));
      return Value(std::move(list));
    }
    case simdjson::dom::element_type::OBJECT: {
      simdjson::dom::object object;
      if (element.get(object) != simdjson::SUCCESS) fail_render("the variables hold a malformed object");
      Dict dict;
      for (simdjson::dom::key_value_pair field : object)
        dict.set(Value(field.key), convert(field.value, depth + 1));  // a repeated key: the last value wins
      return Value(std::move(dict));
    }
    case simdjson::dom::element_type::INT64:
      return Value(element.get_int64().value_unsafe());
    case simdjson::dom::element_type::UINT64:  // beyond int64: Python keeps it exact, a float is the closest here
      return Value(static_cast<double>(element.get_uint64().value_unsafe()));
    case simdjson::dom::element_type::DOUBLE:
      return Value(element.get_double().value_unsafe());
    case simdjson::dom::element_type::STRING:
      return Value(element.get_string().value_unsafe());
    case simdjson::dom::element_type::BOOL:
      return Value(element.get_bool().value_unsafe());
    case simdjson::dom::element_type::NULL_VALUE:
    default:
      return Value(None{});
  }
}

}  // namespace

Value parse_json_value(std::string_view text) {
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(text);
  simdjson::dom::element root;
  if (const auto error = parser.parse(padded).get(root); error != simdjson::SUCCESS)
    fail_render("the variables are not valid JSON: {}", simdjson::error_message(error));
  return convert(root, 0);
}

}  // namespace pagedgen::jinja
