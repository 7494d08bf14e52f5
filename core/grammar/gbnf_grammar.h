// vLLM's guided_grammar in llama.cpp's GBNF: rules `name ::= body`, the start rule `root`.
// A body is alternatives (|) of sequences of: "literals" (escapes \n \r \t \\ \" \[ \]
// \- \xHH \uHHHH \UHHHHHHHH), [classes] with ranges and ^ negation, `.` (any character),
// rule names, ( groups ), each followed by at most one of * + ? {m} {m,} {m,n} {,n}.
// `#` starts a comment to the end of the line; whitespace and newlines separate items, and a
// rule's body ends where `name ::=` starts the next. Characters are Unicode code points
// written as UTF-8. Not read: llama.cpp's token references (<...>, <[...]>).
#pragma once

#include <string_view>

#include "grammar/grammar.h"
#include "util/stop_token.h"

namespace pagedgen {

// Throws Error for a malformed grammar (with the line and column), an undefined or twice
// defined rule, no `root`, left recursion or a grammar no text matches;
// UnsupportedSchemaError for refused features and grammars past the automaton's caps;
// Stopped when `stop` asks.
Grammar gbnf_grammar(std::string_view text, const StopToken& stop = {});

}  // namespace pagedgen
