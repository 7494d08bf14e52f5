// Leftmost-longest matching of added-token texts, with HF's lstrip/rstrip.
#include "tokenizer/added_tokens.h"

#include <algorithm>

namespace pagedgen {
namespace {

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) {
  std::erase_if(tokens, [](const AddedToken& token) { return token.text.empty(); });
  std::stable_sort(tokens.begin(), tokens.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.text.size() > b.text.size(); });
  tokens_.reserve(tokens.size());
  for (AddedToken& token : tokens) {
    if (!id_by_text_.emplace(token.text, token.id).second) continue;
    const auto first = static_cast<unsigned char>(token.text.front());
    by_first_byte_[first].push_back(static_cast<uint32_t>(tokens_.size()));
    tokens_.push_back(std::move(token));
  }
}

std::vector<TextFragment> AddedTokenMatcher::split(std::string_view text, bool parse_special) const {
  std::vector<TextFragment> fragments;
  size_t text_start = 0;  // start of the plain text not yet emitted
  size_t pos = 0;
  while (pos < text.size()) {
    const auto& candidates = by_first_byte_[static_cast<unsigned char>(text[pos])];
    const AddedToken* match = nullptr;
    for (const uint32_t index : candidates) {  // longest first
      const AddedToken& token = tokens_[index];
      if (token.special && !parse_special) continue;
      if (text.substr(pos).starts_with(token.text)) {
        match = &token;
        break;
      }
    }
    if (match == nullptr) {
      ++pos;
      continue;
    }
    std::string_view before = text.substr(text_start, pos - text_start);
    if (match->lstrip) {
      while (!before.empty() && is_ascii_space(before.back())) before.remove_suffix(1);
    }
    if (!before.empty()) fragments.push_back({before, std::nullopt});
    fragments.push_back({text.substr(pos, match->text.size()), match->id});
    pos += match->text.size();
    if (match->rstrip) {
      while (pos < text.size() && is_ascii_space(text[pos])) ++pos;
    }
    text_start = pos;
  }
  if (text_start < text.size()) fragments.push_back({text.substr(text_start), std::nullopt});
  return fragments;
}

std::optional<TokenId> AddedTokenMatcher::find(std::string_view text) const {
  const auto it = id_by_text_.find(std::string(text));
  if (it == id_by_text_.end()) return std::nullopt;
  return it->second;
}

}  // namespace pagedgen
