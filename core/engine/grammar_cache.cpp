#include "engine/grammar_cache.h"

#include "grammar/token_vocabulary.h"
#include "util/error.h"

namespace pagedgen {

std::shared_ptr<const CompiledGrammar> GrammarCache::get(const ResponseFormat& format, const StopToken& stop) {
  PG_CHECK(format.is_constrained(), "a grammar for free text");
  auto key = std::pair{format.type, format.spec};
  if (const auto it = grammars_.find(key); it != grammars_.end()) return it->second;
  if (grammars_.size() >= kMaxKeptGrammars)
    std::erase_if(grammars_, [](const auto& entry) { return entry.second.use_count() == 1; });
  if (!trie_) trie_ = std::make_shared<const TokenTrie>(token_vocabulary(tokenizer_));
  auto compiled = std::make_shared<const CompiledGrammar>(response_format_grammar(format, stop), trie_, stop);
  grammars_.emplace(std::move(key), compiled);
  return compiled;
}

}  // namespace pagedgen
