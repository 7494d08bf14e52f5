#include "io/prompt_field.h"

#include <fmt/format.h>

#include "io/json_line_errors.h"
#include "io/request.h"

namespace pagedgen::json_fields {

namespace {

TokenId read_token_id(od::value value, std::string_view path) {
  const od::json_type type = type_of(value);
  if (type != od::json_type::number)
    throw_line_error(request_error::kInvalidType,
                     fmt::format("{} must be a token id (one prompt per line: lists of prompts are not supported), "
                                 "got {}",
                                 path, type_name(type)));
  const int32_t id = read_int32(value, path);
  if (id < 0)
    throw_line_error(request_error::kInvalidValue, fmt::format("{} must be a token id >= 0, got {}", path, id));
  return id;
}

}  // namespace

std::variant<std::string, std::vector<TokenId>> read_prompt(od::value value, std::string_view path) {
  if (type_of(value) == od::json_type::array) {
    std::vector<TokenId> ids = read_list(value, path, "a list of token ids", read_token_id);
    if (ids.empty())
      throw_line_error(request_error::kInvalidValue,
                       fmt::format("{} must be a non-empty string or list of token ids, got []", path));
    return ids;
  }
  std::string text = read_string(value, path);
  if (text.empty())
    throw_line_error(request_error::kInvalidValue,
                     fmt::format("{} must be a non-empty string or list of token ids, got \"\"", path));
  return text;
}

}  // namespace pagedgen::json_fields
