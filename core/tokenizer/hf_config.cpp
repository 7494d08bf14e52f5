// tokenizer_config.json, generation_config.json and the chat template files of an HF
// model directory, and the id table added tokens extend.
#include "tokenizer/hf_config.h"

#include <algorithm>
#include <charconv>

#include "tokenizer/hf_json.h"
#include "tokenizer/tokenizer_loader.h"
#include "tokenizer/vocabulary.h"
#include "util/error.h"

namespace pagedgen {
namespace hf {

namespace fs = std::filesystem;
using simdjson::dom::element;
using simdjson::dom::element_type;

HfTokenizerConfig read_tokenizer_config(const fs::path& dir) {
  HfTokenizerConfig config;
  const fs::path path = dir / "tokenizer_config.json";
  if (!fs::exists(path)) return config;
  const JsonFile file = load_json(path);
  const auto text_of = [&](std::string_view key) -> std::optional<std::string> {
    const auto value = member(file.root, key);
    return value ? token_content(*value, file, key) : std::nullopt;
  };
  config.bos_text = text_of("bos_token");
  config.eos_text = text_of("eos_token");
  config.unk_text = text_of("unk_token");
  config.pad_text = text_of("pad_token");
  if (const auto value = member(file.root, "add_bos_token")) config.add_bos = as_bool(*value, file, "add_bos_token");
  if (const auto value = member(file.root, "add_eos_token")) config.add_eos = as_bool(*value, file, "add_eos_token");
  if (const auto decoder = member(file.root, "added_tokens_decoder")) {
    simdjson::dom::object entries;
    if (decoder->get_object().get(entries)) fail("{}: added_tokens_decoder should be an object", path.string());
    for (const auto [key, entry] : entries) {
      const std::string what = fmt::format("added_tokens_decoder[\"{}\"]", key);
      TokenId id = 0;
      const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (error != std::errc() || end != key.data() + key.size() || id < 0) {
        fail("{}: {} is keyed by '{}', which is not a token id", path.string(), what, key);
      }
      config.added_tokens.push_back(read_added_token(entry, id, file, what));
    }
  }
  return config;
}

std::vector<TokenId> read_generation_end_ids(const fs::path& dir) {
  const fs::path path = dir / "generation_config.json";
  if (!fs::exists(path)) return {};
  const JsonFile file = load_json(path);
  const auto value = member(file.root, "eos_token_id");
  if (!value) return {};
  std::vector<TokenId> ids;
  if (value->type() == element_type::ARRAY) {
    for (const element id : items_of(*value)) ids.push_back(as_token_id(id, file, "eos_token_id[]"));
  } else {
    ids.push_back(as_token_id(*value, file, "eos_token_id"));
  }
  return ids;
}

void IdTable::place(TokenId id, std::string piece, TokenType type) {
  const auto index = static_cast<size_t>(id);
  if (index >= max_entries) {
    fail(
        "{}: token '{}' has id {}, but there are only {} vocabulary and added-token "
        "entries; the ids are inconsistent",
        source, piece, id, max_entries);
  }
  if (index >= pieces.size()) {
    pieces.resize(index + 1);
    types.resize(index + 1, TokenType::Unused);
  }
  pieces[index] = std::move(piece);
  types[index] = type;
}

void IdTable::place_added(const std::vector<AddedToken>& added) {
  for (const AddedToken& token : added) {
    place(token.id, token.text, token.special ? TokenType::Control : TokenType::UserDefined);
  }
}

std::optional<TokenId> IdTable::find(const std::optional<std::string>& text) const {
  if (!text) return std::nullopt;
  for (size_t id = 0; id < pieces.size(); ++id) {
    if (pieces[id] == *text && types[id] != TokenType::Unused) return static_cast<TokenId>(id);
  }
  return std::nullopt;
}

std::vector<AddedToken> combine_added(std::vector<AddedToken> primary, const std::vector<AddedToken>& secondary) {
  for (const AddedToken& token : secondary) {
    const bool listed =
        std::any_of(primary.begin(), primary.end(), [&](const AddedToken& known) { return known.id == token.id; });
    if (!listed) primary.push_back(token);
  }
  return primary;
}

std::vector<AddedToken> merge_added_tokens(const IdTable& table, const std::vector<AddedToken>& hf_added) {
  std::vector<AddedToken> added = hf_added;
  for (AddedToken& token : added_tokens_from_types(table.pieces, table.types)) {
    const bool listed =
        std::any_of(hf_added.begin(), hf_added.end(), [&](const AddedToken& hf) { return hf.id == token.id; });
    if (!listed) added.push_back(std::move(token));
  }
  return added;
}

}  // namespace hf

std::optional<std::string> hf_chat_template(const std::filesystem::path& dir) {
  using namespace hf;
  namespace fs = std::filesystem;
  const fs::path config_path = dir / "tokenizer_config.json";
  if (fs::exists(config_path)) {
    const JsonFile file = load_json(config_path);
    if (const auto value = member(file.root, "chat_template")) {
      if (value->type() == element_type::STRING) return std::string(as_string(*value, file, "chat_template"));
      simdjson::dom::array named;
      if (value->get_array().get(named)) {
        fail("{}: chat_template should be a string or a list of {{name, template}}", config_path.string());
      }
      for (const element entry : named) {
        const auto name = member(entry, "name");
        const auto text = member(entry, "template");
        if (name && text && as_string(*name, file, "chat_template[].name") == "default") {
          return std::string(as_string(*text, file, "chat_template[].template"));
        }
      }
      return std::nullopt;
    }
  }
  // Newer transformers versions save the template in a file of its own.
  if (fs::exists(dir / "chat_template.jinja")) return read_bytes(dir / "chat_template.jinja");
  if (fs::exists(dir / "chat_template.json")) {
    const JsonFile file = load_json(dir / "chat_template.json");
    if (const auto value = member(file.root, "chat_template"))
      return std::string(as_string(*value, file, "chat_template"));
  }
  return std::nullopt;
}

}  // namespace pagedgen
