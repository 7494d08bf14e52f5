#include "io/json_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "io/request.h"

namespace pagedgen::json_fields {

std::string_view short_json_message(simdjson::error_code error) {
  switch (error) {
    case simdjson::TAPE_ERROR: return "misplaced or missing comma, colon, brace or bracket";
    case simdjson::UNCLOSED_STRING: return "a string is never closed";
    case simdjson::STRING_ERROR: return "bad escape or control character in a string";
    case simdjson::UNESCAPED_CHARS: return "a control character (0x00-0x1F) in a string must be escaped, e.g. \\n or \\u0001";
    case simdjson::NUMBER_ERROR: return "malformed or out-of-range number";
    case simdjson::T_ATOM_ERROR: return "bad literal (expected true)";
    case simdjson::F_ATOM_ERROR: return "bad literal (expected false)";
    case simdjson::N_ATOM_ERROR: return "bad literal (expected null)";
    case simdjson::INCOMPLETE_ARRAY_OR_OBJECT: return "unbalanced braces or brackets, or content after the object";
    case simdjson::DEPTH_ERROR: return "nested too deeply";
    case simdjson::EMPTY: return "no JSON value";
    default: return simdjson::error_message(error);
  }
}

namespace {

// Ondemand reports a malformed literal as a type mismatch of the type its first byte
// announced; on a validated walk that mismatch can only mean bad syntax.
simdjson::error_code literal_error(od::json_type type) {
  return type == od::json_type::boolean ? simdjson::T_ATOM_ERROR : simdjson::N_ATOM_ERROR;
}

std::string element_path(std::string_view path, std::size_t i) { return fmt::format("{}[{}]", path, i); }

}  // namespace

void throw_line_error(std::string_view code, std::string message) {
  throw LineError{code, std::move(message)};
}

void add_unique_key(std::vector<std::string>& keys, std::string_view key, std::string_view path) {
  if (std::ranges::find(keys, key) != keys.end())
    throw_line_error(request_error::kDuplicateField, fmt::format("field \"{}\" appears twice{}", key,
                                                                 path.empty() ? "" : fmt::format(" in {}", path)));
  keys.emplace_back(key);
}

void throw_json_error(simdjson::error_code error, od::document& document, const char* line_begin) {
  const char* location = nullptr;
  // Offset 0 is also what simdjson reports when it has no better position: leave it out.
  if (document.current_location().get(location) == simdjson::SUCCESS && location > line_begin)
    throw_line_error(request_error::kInvalidJson,
                     fmt::format("the line is not valid JSON: {} (near byte {})",
                                 short_json_message(error), location - line_begin));
  throw_line_error(request_error::kInvalidJson,
                   fmt::format("the line is not valid JSON: {}", short_json_message(error)));
}

namespace {

// Where in `line` the string error that iterate() reported lies: the first raw control
// character inside a string (UNESCAPED_CHARS), or the quote that opens the string never
// closed (UNCLOSED_STRING). nullopt for other errors or when the scan does not find it.
std::optional<std::size_t> string_error_offset(simdjson::error_code error, std::string_view line) {
  bool in_string = false;
  std::size_t opening_quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const auto byte = static_cast<unsigned char>(line[i]);
    if (!in_string) {
      if (byte == '"') {
        in_string = true;
        opening_quote = i;
      }
    } else if (byte == '\\') {
      ++i;  // the escaped byte cannot end the string
    } else if (byte == '"') {
      in_string = false;
    } else if (byte < 0x20 && error == simdjson::UNESCAPED_CHARS) {
      return i;
    }
  }
  if (in_string && error == simdjson::UNCLOSED_STRING) return opening_quote;
  return std::nullopt;
}

}  // namespace

void throw_unparsed_json_error(simdjson::error_code error, std::string_view line) {
  if (const std::optional<std::size_t> offset = string_error_offset(error, line))
    throw_line_error(request_error::kInvalidJson, fmt::format("the line is not valid JSON: {} (near byte {})",
                                                              short_json_message(error), *offset));
  throw_line_error(request_error::kInvalidJson,
                   fmt::format("the line is not valid JSON: {}", short_json_message(error)));
}

void validate_value(od::value value, const std::string& path, od::document& document,
                    const char* line_begin, int level) {
  const auto check = [&](simdjson::error_code error) {
    if (error) throw_json_error(error, document, line_begin);
  };
  od::json_type type{};
  check(value.type().get(type));
  if ((type == od::json_type::object || type == od::json_type::array) && level > kMaxNestingLevels) {
    const char* location = nullptr;
    const std::string where = document.current_location().get(location) == simdjson::SUCCESS && location > line_begin
                                  ? fmt::format(" (near byte {})", location - line_begin)
                                  : std::string();
    throw_line_error(request_error::kInvalidJson,
                     fmt::format("the line nests objects and lists deeper than {} levels, which pagedgen does "
                                 "not read{}", kMaxNestingLevels, where));
  }
  switch (type) {
    case od::json_type::object: {
      od::object object;
      check(value.get_object().get(object));
      std::vector<std::string> keys;
      for (auto field : object) {
        std::string_view key;
        check(field.unescaped_key().get(key));
        add_unique_key(keys, key, path);
        od::value child;
        check(field.value().get(child));
        validate_value(child, path.empty() ? std::string(key) : fmt::format("{}.{}", path, key),
                       document, line_begin, level + 1);
      }
      return;
    }
    case od::json_type::array: {
      od::array array;
      check(value.get_array().get(array));
      std::size_t i = 0;
      for (auto element : array) {
        od::value child;
        check(element.get(child));
        validate_value(child, element_path(path, i++), document, line_begin, level + 1);
      }
      return;
    }
    case od::json_type::number: {
      double number = 0;
      check(value.get_double().get(number));
      return;
    }
    case od::json_type::string: {
      std::string_view text;
      check(value.get_string().get(text));
      return;
    }
    case od::json_type::boolean: {
      bool flag = false;
      if (value.get_bool().get(flag)) check(literal_error(type));
      return;
    }
    case od::json_type::null: {
      bool null = false;
      if (value.is_null().get(null) || !null) check(literal_error(type));
      return;
    }
  }
}

std::string_view type_name(od::json_type type) {
  switch (type) {
    case od::json_type::array: return "a list";
    case od::json_type::object: return "an object";
    case od::json_type::number: return "a number";
    case od::json_type::string: return "a string";
    case od::json_type::boolean: return "a boolean";
    case od::json_type::null: return "null";
  }
  return "an unknown type";
}

od::json_type type_of(od::value& value) {
  od::json_type type{};
  if (value.type().get(type)) throw_line_error(request_error::kInvalidJson, "the line is not valid JSON");
  return type;
}

std::string_view token_text(od::value& value) {
  std::string_view text = value.raw_json_token();
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' ||
                           text.back() == '\n'))
    text.remove_suffix(1);
  return text;
}

namespace {

[[noreturn]] void wrong_type(std::string_view path, std::string_view expected, od::json_type got) {
  throw_line_error(request_error::kInvalidType,
                   fmt::format("{} must be {}, got {}", path, expected, type_name(got)));
}

}  // namespace

std::string read_string(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::string) wrong_type(path, "a string", type);
  std::string_view text;
  if (value.get_string().get(text)) throw_line_error(request_error::kInvalidJson, "bad string");
  return std::string(text);
}

double read_number(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::number) wrong_type(path, "a number", type);
  double number = 0;
  if (value.get_double().get(number)) throw_line_error(request_error::kInvalidJson, "bad number");
  return number;
}

// Integers are exact JSON integers: 5 is one, 5.0 and 5e0 are not (as in the OpenAI API).
int32_t read_int32(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::number) wrong_type(path, "an integer", type);
  const std::string_view text = token_text(value);
  if (text.find_first_of(".eE") != std::string_view::npos)
    throw_line_error(request_error::kInvalidType, fmt::format("{} must be an integer, got {}", path, text));
  int64_t number = 0;
  if (value.get_int64().get(number) || number < INT32_MIN || number > INT32_MAX)
    throw_line_error(request_error::kInvalidValue,
                     fmt::format("{} must be an integer in [{}, {}], got {}", path, INT32_MIN, INT32_MAX, text));
  return static_cast<int32_t>(number);
}

uint64_t read_uint64(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::number) wrong_type(path, "an integer", type);
  const std::string_view text = token_text(value);
  if (text.find_first_of(".eE") != std::string_view::npos)
    throw_line_error(request_error::kInvalidType, fmt::format("{} must be an integer, got {}", path, text));
  uint64_t number = 0;
  if (text.starts_with('-') || value.get_uint64().get(number))
    throw_line_error(request_error::kInvalidValue,
                     fmt::format("{} must be an integer in [0, {}], got {}", path, UINT64_MAX, text));
  return number;
}

bool read_bool(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::boolean) wrong_type(path, "true or false", type);
  bool flag = false;
  if (value.get_bool().get(flag)) throw_line_error(request_error::kInvalidJson, "bad literal");
  return flag;
}

namespace {

template <typename Read>
auto read_list(od::value value, std::string_view path, std::string_view expected, Read read) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::array) wrong_type(path, expected, type);
  od::array array;
  if (value.get_array().get(array)) throw_line_error(request_error::kInvalidJson, "bad list");
  std::vector<decltype(read(od::value{}, std::string_view{}))> items;
  std::size_t i = 0;
  for (auto element : array) {
    od::value item;
    if (element.get(item)) throw_line_error(request_error::kInvalidJson, "bad list");
    items.push_back(read(item, element_path(path, i++)));
  }
  return items;
}

// OpenAI content: a string, or a list of parts of which only {"type": "text"} is supported.
std::string read_content(od::value value, const std::string& path) {
  const od::json_type type = type_of(value);
  if (type == od::json_type::string) return read_string(value, path);
  if (type != od::json_type::array)
    wrong_type(path, "a string or a list of {\"type\": \"text\", \"text\": ...} parts", type);
  const std::vector<std::string> parts =
      read_list(value, path, "a list", [](od::value part, std::string_view part_path) {
        const od::json_type part_type = type_of(part);
        if (part_type != od::json_type::object) wrong_type(part_path, "an object", part_type);
        od::object object;
        if (part.get_object().get(object)) throw_line_error(request_error::kInvalidJson, "bad object");
        std::optional<std::string> kind, text;
        for (auto field : object) {
          std::string_view key;
          od::value field_value;
          if (field.unescaped_key().get(key) || field.value().get(field_value))
            throw_line_error(request_error::kInvalidJson, "bad object");
          if (key == "type") kind = read_string(field_value, fmt::format("{}.type", part_path));
          else if (key == "text") text = read_string(field_value, fmt::format("{}.text", part_path));
        }
        if (!kind) throw_line_error(request_error::kMissingField, fmt::format("{}.type is missing", part_path));
        if (*kind != "text")
          throw_line_error(request_error::kInvalidValue,
                           fmt::format("{}.type must be \"text\" (only text parts are supported), got \"{}\"",
                                       part_path, *kind));
        if (!text) throw_line_error(request_error::kMissingField, fmt::format("{}.text is missing", part_path));
        return *text;
      });
  std::string content;
  for (const std::string& part : parts) content += part;
  return content;
}

ChatMessage read_message(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::object) wrong_type(path, "an object with \"role\" and \"content\"", type);
  od::object object;
  if (value.get_object().get(object)) throw_line_error(request_error::kInvalidJson, "bad object");
  std::optional<std::string> role, content;
  for (auto field : object) {
    std::string_view key;
    od::value field_value;
    if (field.unescaped_key().get(key) || field.value().get(field_value))
      throw_line_error(request_error::kInvalidJson, "bad object");
    // Other keys ("name", ...) are ignored, as for top-level keys.
    if (key == "role") role = read_string(field_value, fmt::format("{}.role", path));
    else if (key == "content") content = read_content(field_value, fmt::format("{}.content", path));
  }
  if (!role) throw_line_error(request_error::kMissingField, fmt::format("{}.role is missing", path));
  if (role->empty())
    throw_line_error(request_error::kInvalidValue,
                     fmt::format("{}.role must be a role such as \"system\", \"user\" or \"assistant\", got \"\"", path));
  if (!content) throw_line_error(request_error::kMissingField, fmt::format("{}.content is missing", path));
  return ChatMessage{std::move(*role), std::move(*content)};
}

}  // namespace

std::vector<ChatMessage> read_messages(od::value value, std::string_view path) {
  std::vector<ChatMessage> messages =
      read_list(value, path, "a list of {\"role\", \"content\"} objects", read_message);
  if (messages.empty())
    throw_line_error(request_error::kInvalidValue, fmt::format("{} must hold at least one message", path));
  return messages;
}

namespace {

// {"<token id>": bias, ...}: keys are token ids written in decimal without a sign or
// leading zeros, so each id has one spelling and none can be given twice. Sorted by id;
// the values' range is SamplingParams' (validate()).
std::vector<LogitBias> read_logit_bias(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::object) wrong_type(path, "an object mapping token ids to biases", type);
  od::object object;
  if (value.get_object().get(object)) throw_line_error(request_error::kInvalidJson, "bad object");
  std::vector<LogitBias> biases;
  for (auto field : object) {
    std::string_view key;
    od::value bias;
    if (field.unescaped_key().get(key) || field.value().get(bias))
      throw_line_error(request_error::kInvalidJson, "bad object");
    const bool canonical = !key.empty() && key.size() <= 10 && key.find_first_not_of("0123456789") == std::string_view::npos &&
                           (key == "0" || key.front() != '0');
    const int64_t id = canonical ? std::stoll(std::string(key)) : -1;
    if (!canonical || id > INT32_MAX)
      throw_line_error(request_error::kInvalidValue,
                       fmt::format("{} keys must be token ids in decimal, e.g. \"50256\"; got \"{}\"", path, key));
    biases.push_back({static_cast<TokenId>(id), read_number(bias, fmt::format("{}[\"{}\"]", path, key))});
  }
  std::sort(biases.begin(), biases.end(), [](const LogitBias& a, const LogitBias& b) { return a.id < b.id; });
  return biases;
}

}  // namespace

bool read_sampling_field(std::string_view key, od::value value, SamplingParams& params) {
  const bool is_sampling_field = key == "temperature" || key == "top_p" || key == "top_k" ||
                                 key == "min_p" || key == "seed" || key == "stop" ||
                                 key == "stop_token_ids" || key == "max_tokens" ||
                                 key == "min_tokens" || key == "ignore_eos" || key == "n" ||
                                 key == "presence_penalty" || key == "frequency_penalty" ||
                                 key == "repetition_penalty" || key == "logit_bias";
  if (!is_sampling_field) return false;
  if (type_of(value) == od::json_type::null) return true;  // null keeps the default
  if (key == "temperature") {
    params.temperature = read_number(value, key);
  } else if (key == "top_p") {
    params.top_p = read_number(value, key);
  } else if (key == "top_k") {
    const int32_t top_k = read_int32(value, key);
    params.top_k = top_k == -1 ? 0 : top_k;  // vLLM's "off"
  } else if (key == "min_p") {
    params.min_p = read_number(value, key);
  } else if (key == "seed") {
    params.seed = read_uint64(value, key);
  } else if (key == "stop") {
    if (type_of(value) == od::json_type::string) params.stop = {read_string(value, key)};
    else params.stop = read_list(value, key, "a string or a list of strings", read_string);
  } else if (key == "stop_token_ids") {
    params.stop_token_ids = read_list(value, key, "a list of token ids", read_int32);
  } else if (key == "max_tokens") {
    params.max_tokens = read_int32(value, key);
  } else if (key == "min_tokens") {
    params.min_tokens = read_int32(value, key);
  } else if (key == "ignore_eos") {
    params.ignore_eos = read_bool(value, key);
  } else if (key == "n") {
    params.n = read_int32(value, key);
  } else if (key == "presence_penalty") {
    params.presence_penalty = read_number(value, key);
  } else if (key == "frequency_penalty") {
    params.frequency_penalty = read_number(value, key);
  } else if (key == "repetition_penalty") {
    params.repetition_penalty = read_number(value, key);
  } else if (key == "logit_bias") {
    params.logit_bias = read_logit_bias(value, key);
  }
  return true;
}

}  // namespace pagedgen::json_fields
