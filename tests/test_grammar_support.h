// What the grammar tests share: hand-made vocabularies, the allowed tokens of a matcher
// read back as ids or texts, and the reference they are checked against: trying every
// token on a copy of the matcher (accept_token walks the automaton byte by byte and never
// looks at the precomputed classes the mask comes from).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_error.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_bitmask.h"
#include "util/error.h"

namespace pagedgen::test {

// In a hand-made vocabulary this text stands for an end-of-generation token (no bytes).
inline constexpr std::string_view kEos = "<eos>";

inline std::shared_ptr<const TokenTrie> make_trie(const std::vector<std::string>& texts) {
  TokenVocabulary vocabulary;
  for (size_t id = 0; id < texts.size(); ++id) {
    if (texts[id] == kEos) {
      vocabulary.bytes_by_id.emplace_back();
      vocabulary.end_of_generation.push_back(static_cast<TokenId>(id));
    } else {
      vocabulary.bytes_by_id.push_back(texts[id]);
    }
  }
  return std::make_shared<const TokenTrie>(std::move(vocabulary));
}

inline std::shared_ptr<const CompiledGrammar> compile_for(Grammar grammar, const std::vector<std::string>& texts) {
  return std::make_shared<const CompiledGrammar>(std::move(grammar), make_trie(texts));
}

// Every single byte as a token, then an end-of-generation token (id 256).
inline std::vector<std::string> byte_vocabulary() {
  std::vector<std::string> texts;
  for (int b = 0; b < 256; ++b) texts.emplace_back(1, static_cast<char>(b));
  texts.emplace_back(kEos);
  return texts;
}

inline std::vector<TokenId> allowed_ids(GrammarMatcher& matcher) {
  std::vector<uint32_t> mask(token_mask_words(matcher.grammar().vocabulary().size()));
  matcher.fill_next_token_mask(mask);
  std::vector<TokenId> ids;
  for (TokenId id = 0; id < matcher.grammar().vocabulary().size(); ++id)
    if (token_allowed(mask, id)) ids.push_back(id);
  return ids;
}

// The reference for allowed_ids: each token tried on its own copy of the matcher.
inline std::vector<TokenId> brute_force_ids(const GrammarMatcher& matcher) {
  std::vector<TokenId> ids;
  for (TokenId id = 0; id < matcher.grammar().vocabulary().size(); ++id) {
    GrammarMatcher copy = matcher;
    if (copy.accept_token(id)) ids.push_back(id);
  }
  return ids;
}

// The allowed tokens' texts in id order (end-of-generation as "<eos>").
inline std::vector<std::string> allowed_texts(GrammarMatcher& matcher, const std::vector<std::string>& texts) {
  std::vector<std::string> out;
  for (const TokenId id : allowed_ids(matcher)) out.push_back(texts[static_cast<size_t>(id)]);
  return out;
}

// Whether `text`, fed byte by byte, is a complete value of the grammar.
inline bool byte_matches(const std::shared_ptr<const CompiledGrammar>& grammar, std::string_view text) {
  GrammarMatcher matcher(grammar);
  for (const char c : text) {
    if (!matcher.accept_token(static_cast<uint8_t>(c))) return false;
  }
  return matcher.is_complete();
}

// The message of the error `compile` throws, "unsupported: " before an
// UnsupportedSchemaError's; "(accepted)" when it throws none.
template <typename Compile>
std::string refusal_message(Compile compile) {
  try {
    (void)compile();
  } catch (const UnsupportedSchemaError& e) {
    return std::string("unsupported: ") + e.what();
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

inline bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

}  // namespace pagedgen::test
