#include "io/response_format_field.h"

#include <fmt/format.h>

#include <new>
#include <optional>

#include "grammar/grammar_error.h"
#include "io/json_schema_format.h"
#include "io/json_values.h"
#include "io/request.h"
#include "util/error.h"

namespace pagedgen::json_fields {

namespace {

[[noreturn]] void unknown_key(std::string_view path, std::string_view key, std::string_view known) {
  throw_line_error(request_error::kUnsupportedField,
                   fmt::format("{}.{} is not supported by pagedgen (it reads {}); remove it", path, key, known));
}

od::object read_object(od::value value, std::string_view path, std::string_view example) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::object)
    throw_line_error(request_error::kInvalidType,
                     fmt::format("{} must be an object such as {}, got {}", path, example, type_name(type)));
  od::object object;
  PG_CHECK(value.get_object().get(object) == simdjson::SUCCESS, "object of a validated line");
  return object;
}

}  // namespace

std::string_view schema_text(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type == od::json_type::boolean) return token_text(value);
  if (type != od::json_type::object)
    throw_line_error(
        request_error::kInvalidType,
        fmt::format("{} must be a JSON Schema (an object, or true or false), got {}", path, type_name(type)));
  od::object object;
  std::string_view text;
  PG_CHECK(value.get_object().get(object) == simdjson::SUCCESS && object.raw_json().get(text) == simdjson::SUCCESS,
           "schema of a validated line");
  return text;
}

ResponseFormat ResponseFormatReader::read(od::value value, std::string_view path, const StopToken& stop) {
  od::object object = read_object(value, path, R"({"type": "json_object"})");
  std::optional<std::string> type;
  std::optional<ResponseFormat> schema_format;  // from json_schema
  for (auto field : object) {
    std::string_view key;
    od::value field_value;
    PG_CHECK(field.unescaped_key().get(key) == simdjson::SUCCESS && field.value().get(field_value) == simdjson::SUCCESS,
             "field of a validated line");
    const std::string field_path = fmt::format("{}.{}", path, key);
    if (key == "type") {
      type = read_string(field_value, field_path);
    } else if (key == "json_schema") {
      schema_format = read_json_schema(field_value, field_path, stop);
    } else {
      unknown_key(path, key, "type and json_schema");
    }
  }
  if (!type)
    throw_line_error(request_error::kMissingField,
                     fmt::format("{}.type is missing: give \"text\", \"json_object\" or \"json_schema\"", path));
  if (*type == "json_schema") {
    if (!schema_format)
      throw_line_error(request_error::kMissingField,
                       fmt::format("{}.json_schema is missing: type \"json_schema\" needs {{\"name\": ..., \"schema\": "
                                   "{{...}}}}",
                                   path));
    return std::move(*schema_format);
  }
  if (*type != "text" && *type != "json_object")
    throw_line_error(
        request_error::kInvalidValue,
        fmt::format("{}.type must be \"text\", \"json_object\" or \"json_schema\", got \"{}\"", path, *type));
  if (schema_format)
    throw_line_error(request_error::kConflictingFields,
                     fmt::format("{}.json_schema is given but {}.type is \"{}\"; give type \"json_schema\" or remove "
                                 "json_schema",
                                 path, path, *type));
  return ResponseFormat{*type == "text" ? ResponseFormat::Type::kText : ResponseFormat::Type::kJsonObject, {}};
}

ResponseFormat ResponseFormatReader::read_json_schema(od::value value, const std::string& path, const StopToken& stop) {
  od::object json_schema = read_object(value, path, R"({"name": "...", "schema": {...}})");
  bool has_name = false;
  std::optional<ResponseFormat> schema_format;
  for (auto field : json_schema) {
    std::string_view key;
    od::value v;
    PG_CHECK(field.unescaped_key().get(key) == simdjson::SUCCESS && field.value().get(v) == simdjson::SUCCESS,
             "field of a validated line");
    const std::string at = fmt::format("{}.{}", path, key);
    const bool is_null = type_of(v) == od::json_type::null;
    if (key == "name") {
      has_name = true;
      if (read_string(v, at).empty())
        throw_line_error(request_error::kInvalidValue, fmt::format("{} must be a non-empty string", at));
    } else if (key == "schema") {
      schema_format = checked(ResponseFormat::Type::kJsonSchema, schema_text(v, at), at, stop);
    } else if (key == "strict") {
      if (!is_null) (void)read_bool(v, at);  // the schema is enforced either way
    } else if (key == "description") {
      if (!is_null) (void)read_string(v, at);
    } else {
      unknown_key(path, key, "name, schema, strict and description");
    }
  }
  if (!has_name)
    throw_line_error(request_error::kMissingField,
                     fmt::format("{}.name is missing: give the schema a name, as the OpenAI API requires", path));
  if (!schema_format)
    throw_line_error(request_error::kMissingField,
                     fmt::format("{}.schema is missing: give the JSON Schema the output must follow", path));
  return std::move(*schema_format);
}

ResponseFormat ResponseFormatReader::checked(ResponseFormat::Type type, std::string_view spec, std::string_view path,
                                             const StopToken& stop) {
  const Checked& result = check(type, spec, stop);
  if (const LineError* error = std::get_if<LineError>(&result))
    throw_line_error(error->code, fmt::format("{}: {}", path, error->message));
  return std::get<ResponseFormat>(result);
}

const ResponseFormatReader::Checked& ResponseFormatReader::check(ResponseFormat::Type type, std::string_view spec,
                                                                 const StopToken& stop) {
  std::string key = std::string(response_format_type_name(type)) + ':' + std::string(spec);
  if (const auto it = checked_.find(key); it != checked_.end()) return it->second;
  if (checked_.size() >= kMaxCachedSchemas) checked_.clear();
  Checked checked;
  try {
    if (type == ResponseFormat::Type::kJsonSchema) {
      checked = json_schema_format(spec, stop);
    } else {
      ResponseFormat format{type, std::string(spec)};
      (void)response_format_grammar(format, stop);
      checked = std::move(format);
    }
  } catch (const UnsupportedSchemaError& e) {
    checked = LineError{request_error::kUnsupportedField, e.what()};
  } catch (const Error& e) {
    checked = LineError{request_error::kInvalidValue, e.what()};
  } catch (const std::bad_alloc&) {  // this constraint's grammar, not the run, is too big
    checked = LineError{request_error::kUnsupportedField,
                        "the grammar needs more memory than there is to compile it; make it smaller"};
  }
  return checked_.emplace(std::move(key), std::move(checked)).first->second;
}

}  // namespace pagedgen::json_fields
