// A grammar made ready for one vocabulary: the automaton, the vocabulary's token trie and
// the per-node token classes. Immutable once built, so every sequence that uses the same
// schema shares one (through GrammarMatcher).
#pragma once

#include <memory>

#include "grammar/grammar.h"
#include "grammar/token_mask_cache.h"
#include "grammar/token_trie.h"
#include "util/stop_token.h"

namespace pagedgen {

class CompiledGrammar {
 public:
  // `trie` may be shared by every grammar of one tokenizer. Throws Stopped when `stop` asks
  // while the token masks are built.
  CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenTrie> trie, const StopToken& stop = {});

  const Grammar& grammar() const { return grammar_; }
  const TokenTrie& trie() const { return *trie_; }
  const TokenVocabulary& vocabulary() const { return trie_->vocabulary(); }
  const TokenMaskCache& masks() const { return masks_; }

 private:
  Grammar grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  TokenMaskCache masks_;
};

}  // namespace pagedgen
