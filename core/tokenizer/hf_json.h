// Reading the JSON files of an HF model directory with simdjson: typed accessors whose
// errors name the file and the key path, and the AddedToken entries that tokenizer.json
// and tokenizer_config.json both use.
#pragma once

#include <simdjson.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_tokens.h"

namespace pagedgen::hf {

// A parsed file; its elements stay valid while it lives.
struct JsonFile {
  std::filesystem::path path;
  std::unique_ptr<simdjson::dom::parser> parser;
  simdjson::dom::element root;
};

// Throws Error naming the file when it cannot be read or is not JSON.
JsonFile load_json(const std::filesystem::path& path);
std::string read_bytes(const std::filesystem::path& path);

// The member `key` of an object; nullopt when absent, null, or `object` is no object.
std::optional<simdjson::dom::element> member(simdjson::dom::element object, std::string_view key);
// The elements of an array value (callers check the type first); empty for anything else.
simdjson::dom::array items_of(simdjson::dom::element value);

// Typed reads; `what` is the key path for the Error message ("model.merges[3]").
std::string_view as_string(simdjson::dom::element value, const JsonFile& file, std::string_view what);
bool as_bool(simdjson::dom::element value, const JsonFile& file, std::string_view what);
TokenId as_token_id(simdjson::dom::element value, const JsonFile& file, std::string_view what);
bool bool_member(simdjson::dom::element object, std::string_view key, bool fallback, const JsonFile& file,
                 std::string_view what);
// A special token in tokenizer_config.json: "<s>" or {"content": "<s>", ...}.
std::optional<std::string> token_content(simdjson::dom::element value, const JsonFile& file, std::string_view what);

// One {"content", "special", "lstrip", "rstrip", ...} entry with the given id.
AddedToken read_added_token(simdjson::dom::element entry, TokenId id, const JsonFile& file, std::string_view what);
// tokenizer.json "added_tokens" (each entry carries its "id").
std::vector<AddedToken> read_json_added_tokens(const JsonFile& file);

}  // namespace pagedgen::hf
