// Building the token mask cache is the expensive part of compiling a grammar.
#include "grammar/compiled_grammar.h"

#include <utility>

namespace pagedgen {

CompiledGrammar::CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenTrie> trie, const StopToken& stop)
    : grammar_(std::move(grammar)), trie_(std::move(trie)), masks_(grammar_, *trie_, stop) {}

}  // namespace pagedgen
