// What an HF model directory says besides the vocabulary itself: special tokens, add_bos
// and added tokens (tokenizer_config.json), end-of-generation ids (generation_config.json),
// and the id table that added tokens extend past the model's own vocabulary.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/token_type.h"

namespace pagedgen::hf {

struct HfTokenizerConfig {
  std::optional<std::string> bos_text, eos_text, unk_text, pad_text;
  std::optional<bool> add_bos, add_eos;
  std::vector<AddedToken> added_tokens;  // "added_tokens_decoder"
};

// Defaults (all unset) when the file is absent. Throws Error for a malformed file.
HfTokenizerConfig read_tokenizer_config(const std::filesystem::path& dir);

// generation_config.json "eos_token_id": one id or a list (Llama 3 lists several).
std::vector<TokenId> read_generation_end_ids(const std::filesystem::path& dir);

// Pieces and types, grown to cover the added tokens (which may lie past the model's own
// vocabulary); holes read as unused.
struct IdTable {
  std::vector<std::string> pieces;
  std::vector<TokenType> types;
  // Ids are dense in practice; one far past the number of entries is a broken file (and
  // must not make us allocate billions of slots).
  size_t max_entries = 0;
  std::string source;  // for messages

  // Throws Error when id >= max_entries.
  void place(TokenId id, std::string piece, TokenType type);
  // Special added tokens as control, the others as user-defined.
  void place_added(const std::vector<AddedToken>& added);
  // Text -> id as the special-token keys in tokenizer_config.json name them.
  std::optional<TokenId> find(const std::optional<std::string>& text) const;
};

// tokenizer.json's added_tokens, then tokenizer_config.json's added_tokens_decoder entries
// for ids it does not list (the two normally agree).
std::vector<AddedToken> combine_added(std::vector<AddedToken> primary, const std::vector<AddedToken>& secondary);

// The tokens to match by text: those HF lists (whose strip flags win), then any other
// control/user-defined tokens of the table.
std::vector<AddedToken> merge_added_tokens(const IdTable& table, const std::vector<AddedToken>& hf_added);
}  // namespace pagedgen::hf
