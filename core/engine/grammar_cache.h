// GrammarCache: the compiled grammar of each response format the engine meets, for one
// tokenizer: compiled once (its token classes take from a few to a few hundred ms) and
// shared, immutable, by every sample that uses it, each through its own GrammarMatcher.
// The tokenizer's token trie is built on first use and shared by all of them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "grammar/compiled_grammar.h"
#include "sample/response_format.h"
#include "tokenizer/tokenizer.h"
#include "util/stop_token.h"

namespace pagedgen {

class GrammarCache {
 public:
  // `tokenizer` must outlive the cache.
  explicit GrammarCache(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  // The grammar of a constrained `format`. Throws Error when it does not compile (the
  // request readers check every constraint first: io/response_format_field.h); Stopped when
  // `stop` asks while it compiles (nothing is kept of it then).
  std::shared_ptr<const CompiledGrammar> get(const ResponseFormat& format, const StopToken& stop = {});

  size_t num_grammars() const { return grammars_.size(); }

 private:
  // Grammars no matcher holds are dropped once this many are kept, so that an input of
  // ever new schemas holds a bounded number.
  static constexpr size_t kMaxKeptGrammars = 32;

  const Tokenizer& tokenizer_;
  std::shared_ptr<const TokenTrie> trie_;
  std::map<std::pair<ResponseFormat::Type, std::string>, std::shared_ptr<const CompiledGrammar>> grammars_;
};

}  // namespace pagedgen
