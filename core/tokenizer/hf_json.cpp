// simdjson accessors for HF JSON files: every failure names the file and the key path.
#include "tokenizer/hf_json.h"

#include <fstream>
#include <sstream>

#include "util/error.h"

namespace pagedgen::hf {

namespace fs = std::filesystem;
using simdjson::dom::element;
using simdjson::dom::element_type;

JsonFile load_json(const fs::path& path) {
  JsonFile file{path, std::make_unique<simdjson::dom::parser>(), {}};
  if (const auto error = file.parser->load(path.string()).get(file.root)) {
    fail("{}: cannot read as JSON: {}; check the file is complete and valid JSON", path.string(),
         simdjson::error_message(error));
  }
  return file;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open for reading; check it exists and is readable", path.string());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return std::move(bytes).str();
}

// The member `key` of an object; nullopt when absent, null, or `object` is no object.
std::optional<element> member(element object, std::string_view key) {
  element value;
  if (object.type() != element_type::OBJECT || object.at_key(key).get(value)) return std::nullopt;
  if (value.type() == element_type::NULL_VALUE) return std::nullopt;
  return value;
}

std::string_view as_string(element value, const JsonFile& file, std::string_view what) {
  std::string_view text;
  if (value.get_string().get(text)) fail("{}: {} should be a string", file.path.string(), what);
  return text;
}

bool as_bool(element value, const JsonFile& file, std::string_view what) {
  bool flag = false;
  if (value.get_bool().get(flag)) fail("{}: {} should be true or false", file.path.string(), what);
  return flag;
}

TokenId as_token_id(element value, const JsonFile& file, std::string_view what) {
  uint64_t id = 0;
  if (value.get_uint64().get(id) || id > static_cast<uint64_t>(INT32_MAX)) {
    fail("{}: {} should be a token id (a non-negative integer)", file.path.string(), what);
  }
  return static_cast<TokenId>(id);
}

// The elements of an array value (callers check the type first); empty for anything else.
simdjson::dom::array items_of(element value) {
  simdjson::dom::array items;
  if (value.get_array().get(items)) return {};
  return items;
}

bool bool_member(element object, std::string_view key, bool fallback, const JsonFile& file, std::string_view what) {
  const auto value = member(object, key);
  return value ? as_bool(*value, file, fmt::format("{}.{}", what, key)) : fallback;
}

// A special token in tokenizer_config.json: "<s>" or {"content": "<s>", ...}.
std::optional<std::string> token_content(element value, const JsonFile& file, std::string_view what) {
  if (value.type() == element_type::STRING) return std::string(as_string(value, file, what));
  if (const auto content = member(value, "content")) {
    return std::string(as_string(*content, file, fmt::format("{}.content", what)));
  }
  fail("{}: {} should be a string or an object with \"content\"", file.path.string(), what);
}

AddedToken read_added_token(element entry, TokenId id, const JsonFile& file, std::string_view what) {
  AddedToken token;
  token.id = id;
  const auto content = member(entry, "content");
  if (!content) fail("{}: {} has no \"content\"", file.path.string(), what);
  token.text = std::string(as_string(*content, file, fmt::format("{}.content", what)));
  token.special = bool_member(entry, "special", false, file, what);
  token.lstrip = bool_member(entry, "lstrip", false, file, what);
  token.rstrip = bool_member(entry, "rstrip", false, file, what);
  return token;
}

std::vector<AddedToken> read_json_added_tokens(const JsonFile& file) {
  std::vector<AddedToken> added;
  const auto list = member(file.root, "added_tokens");
  if (!list) return added;
  simdjson::dom::array entries;
  if (list->get_array().get(entries)) fail("{}: added_tokens should be a list", file.path.string());
  size_t index = 0;
  for (const element entry : entries) {
    const std::string what = fmt::format("added_tokens[{}]", index++);
    const auto id = member(entry, "id");
    if (!id) fail("{}: {} has no \"id\"", file.path.string(), what);
    added.push_back(read_added_token(entry, as_token_id(*id, file, what + ".id"), file, what));
  }
  return added;
}

}  // namespace pagedgen::hf
