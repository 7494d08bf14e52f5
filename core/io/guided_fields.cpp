// Each constraint field read into a ResponseFormat checked by the reader (compiled once per
// distinct constraint), and the one-constraint-per-line rule.
#include "io/guided_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <optional>

#include "io/json_values.h"
#include "io/request.h"
#include "util/error.h"
#include "util/json_quote.h"

namespace pagedgen::json_fields {
namespace {

using Type = ResponseFormat::Type;

// A JSON Schema given as an object, or as its JSON text in a string (vLLM takes both).
std::string schema_spec(od::value value, std::string_view path) {
  if (type_of(value) == od::json_type::string) return read_string(value, path);
  return std::string(schema_text(value, path));
}

// guided_choice's list as the compact JSON array ResponseFormat keeps.
std::string choice_spec(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::array)
    throw_line_error(request_error::kInvalidType,
                     fmt::format("{} must be a list of strings, got {}", path, type_name(type)));
  od::array array;
  PG_CHECK(value.get_array().get(array) == simdjson::SUCCESS, "array of a validated line");
  std::string spec = "[";
  size_t index = 0;
  for (auto item : array) {
    od::value element;
    PG_CHECK(item.get(element) == simdjson::SUCCESS, "element of a validated line");
    spec += (index > 0 ? "," : "") + json_quote(read_string(element, fmt::format("{}[{}]", path, index)));
    ++index;
  }
  if (index == 0)
    throw_line_error(request_error::kInvalidValue, fmt::format("{} is an empty list; give at least one choice", path));
  return spec + "]";
}

std::string text_spec(od::value value, std::string_view path) {
  std::string text = read_string(value, path);
  if (text.empty()) throw_line_error(request_error::kInvalidValue, fmt::format("{} must not be empty", path));
  return text;
}

// One of structured_outputs' keys as the format it asks for; nullopt for keys that ask for
// nothing (null, json_object false, the options that change nothing here).
std::optional<ResponseFormat> structured_output(std::string_view key, od::value value, const std::string& path,
                                                ResponseFormatReader& reader, const StopToken& stop) {
  if (type_of(value) == od::json_type::null) return std::nullopt;
  if (key == "json") return reader.checked(Type::kJsonSchema, schema_spec(value, path), path, stop);
  if (key == "regex") return reader.checked(Type::kRegex, text_spec(value, path), path, stop);
  if (key == "choice") return reader.checked(Type::kChoice, choice_spec(value, path), path, stop);
  if (key == "grammar") return reader.checked(Type::kGrammar, text_spec(value, path), path, stop);
  if (key == "json_object")
    return read_bool(value, path) ? std::optional(ResponseFormat{Type::kJsonObject, {}}) : std::nullopt;
  // The output has no whitespace outside strings and there is no fallback decoding, so
  // these ask for what is done anyway.
  if (key == "disable_any_whitespace" || key == "disable_fallback") {
    (void)read_bool(value, path);
    return std::nullopt;
  }
  throw_line_error(request_error::kUnsupportedField,
                   fmt::format("{} is not supported by pagedgen (it reads json, regex, choice, grammar, json_object, "
                               "disable_any_whitespace and disable_fallback); remove it",
                               path));
}

ResponseFormat read_structured_outputs(od::value value, std::string_view path, ResponseFormatReader& reader,
                                       const StopToken& stop) {
  if (type_of(value) != od::json_type::object)
    throw_line_error(request_error::kInvalidType, fmt::format("{} must be an object such as {{\"regex\": \"...\"}}, "
                                                              "got {}",
                                                              path, type_name(type_of(value))));
  od::object object;
  PG_CHECK(value.get_object().get(object) == simdjson::SUCCESS, "object of a validated line");
  LineConstraint inner;
  ResponseFormat format;
  for (auto field : object) {
    std::string_view key;
    od::value v;
    PG_CHECK(field.unescaped_key().get(key) == simdjson::SUCCESS && field.value().get(v) == simdjson::SUCCESS,
             "field of a validated line");
    const std::string at = fmt::format("{}.{}", path, key);
    if (auto asked = structured_output(key, v, at, reader, stop)) {
      if (!inner.path.empty())
        throw_line_error(request_error::kConflictingFields,
                         fmt::format("{} and {} both constrain the output; give one", inner.path, at));
      inner.path = at;
      format = std::move(*asked);
    }
  }
  return format;
}

}  // namespace

bool read_constraint_field(std::string_view key, od::value value, std::string_view path, ResponseFormatReader& reader,
                           LineConstraint& constraint, ResponseFormat& format, const StopToken& stop) {
  static constexpr std::string_view kKeys[] = {"response_format", "guided_json",    "guided_regex",
                                               "guided_choice",   "guided_grammar", "structured_outputs"};
  if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) return false;
  if (type_of(value) == od::json_type::null) return true;
  const std::string at(path);
  ResponseFormat read;
  if (key == "response_format") read = reader.read(value, at, stop);
  if (key == "guided_json") read = reader.checked(Type::kJsonSchema, schema_spec(value, at), at, stop);
  if (key == "guided_regex") read = reader.checked(Type::kRegex, text_spec(value, at), at, stop);
  if (key == "guided_choice") read = reader.checked(Type::kChoice, choice_spec(value, at), at, stop);
  if (key == "guided_grammar") read = reader.checked(Type::kGrammar, text_spec(value, at), at, stop);
  if (key == "structured_outputs") read = read_structured_outputs(value, at, reader, stop);
  if (!read.is_constrained()) {
    // response_format {"type": "text"} frees the line of the command line's default.
    if (key == "response_format" && constraint.path.empty()) format = std::move(read);
    return true;
  }
  if (!constraint.path.empty())
    throw_line_error(request_error::kConflictingFields,
                     fmt::format("{} and {} both constrain the output; give one", constraint.path, at));
  constraint.path = at;
  format = std::move(read);
  return true;
}

}  // namespace pagedgen::json_fields
