#include "io/line_identity.h"

#include <fmt/format.h>

#include <vector>

#include "io/json_line_errors.h"
#include "io/json_validation.h"
#include "io/json_values.h"
#include "util/error.h"

namespace pagedgen::json_fields {

namespace {

// An integer literal that neither int64 nor uint64 holds: valid JSON, but most readers
// (simdjson's DOM among them, and so a resume of the output) refuse it or round it.
bool is_big_integer(od::value& value, std::string_view token) {
  if (token.find_first_of(".eE") != std::string_view::npos) return false;
  int64_t signed_value = 0;
  uint64_t unsigned_value = 0;
  return value.get_int64().get(signed_value) != simdjson::SUCCESS &&
         value.get_uint64().get(unsigned_value) != simdjson::SUCCESS;
}

}  // namespace

LineIdentity read_line_identity(od::document& document, const char* line_begin, uint64_t index, IdKey id_key,
                                std::string_view shape, StopPoll& poll) {
  const auto check = [&](simdjson::error_code error) {
    if (error) throw_json_error(error, document, line_begin);
  };
  od::json_type root_type{};
  check(document.type().get(root_type));
  if (root_type != od::json_type::object)
    throw_line_error(request_error::kInvalidType,
                     fmt::format("a request line must be a JSON object {}, got {}", shape, type_name(root_type)));
  od::object object;
  check(document.get_object().get(object));
  LineIdentity identity{std::nullopt, fmt::format("#{}", index)};
  std::optional<LineError> id_error;
  SeenKeys keys;
  for (auto field : object) {
    std::string_view key;
    check(field.unescaped_key().get(key));
    add_unique_key(keys, key, "");
    od::value value;
    check(field.value().get(value));
    if (key == id_key.name) {
      const od::json_type type = type_of(value);
      if (type == od::json_type::string || (id_key.allow_number && type == od::json_type::number)) {
        identity.id_json = std::string(token_text(value));
        if (type == od::json_type::string) {
          std::string_view decoded;
          check(value.get_string().get(decoded));
          identity.seed_key = std::string(decoded);
        } else {
          double number = 0;
          check(value.get_double().get(number));
          if (is_big_integer(value, *identity.id_json))
            id_error = LineError{request_error::kInvalidValue,
                                 fmt::format("{} {} is an integer beyond 64 bits, which JSON readers cannot hold "
                                             "exactly; give it as a string",
                                             id_key.name, *identity.id_json)};
          identity.seed_key = *identity.id_json;
        }
        continue;
      }
      if (type != od::json_type::null)
        id_error = LineError{request_error::kInvalidType,
                             fmt::format("{} must be a string{}, got {}", id_key.name,
                                         id_key.allow_number ? ", a number or null" : " or null", type_name(type))};
    }
    validate_value(value, std::string(key), document, line_begin, poll);
  }
  const char* trailing = nullptr;
  if (document.current_location().get(trailing) == simdjson::SUCCESS)
    throw_line_error(
        request_error::kInvalidJson,
        fmt::format("the line is not valid JSON: content after the object (near byte {})", trailing - line_begin));
  if (id_error) throw *id_error;
  return identity;
}

RequestItem parse_identified_line(od::document& document, const char* line_begin, uint64_t index, IdKey id_key,
                                  std::string_view shape, const FieldReader& read_fields, StopPoll& poll) {
  LineIdentity identity;
  try {
    identity = read_line_identity(document, line_begin, index, id_key, shape, poll);
  } catch (const LineError& error) {
    return RequestError{index, std::nullopt, std::string(error.code), error.message};
  }
  try {
    // Pass 2: the line is valid JSON; the format reads the fields it gives, in line order.
    document.rewind();
    od::object object;
    PG_CHECK(document.get_object().get(object) == simdjson::SUCCESS, "object of a validated line");
    return read_fields(identity, object);
  } catch (const LineError& error) {
    return RequestError{index, identity.id_json, std::string(error.code), error.message};
  }
}

Request make_request(uint64_t index, const LineIdentity& identity, decltype(Request::input) input,
                     SamplingParams sampling) {
  try {
    validate(sampling);
  } catch (const Error& error) {
    throw_line_error(request_error::kInvalidValue, error.what());
  }
  Request request;
  request.index = index;
  request.id_json = identity.id_json;
  request.seed_key = identity.seed_key;
  request.input = std::move(input);
  request.sampling = std::move(sampling);
  return request;
}

}  // namespace pagedgen::json_fields
