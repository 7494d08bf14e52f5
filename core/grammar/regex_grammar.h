// Grammars for vLLM's guided_regex and guided_choice: a regex the whole text must match
// (regex_parser.h for the syntax), and a list of texts the whole text must be one of.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "grammar/grammar.h"
#include "util/stop_token.h"

namespace pagedgen {

// Throws Error for a malformed pattern; UnsupportedSchemaError (grammar_error.h) for a
// refused feature or a pattern past the automaton's caps (naming the cap); Stopped when
// `stop` asks.
Grammar regex_grammar(std::string_view pattern, const StopToken& stop = {});

// Throws Error for an empty list or a choice that is not UTF-8; UnsupportedSchemaError
// when the choices together pass GrammarBuilder::kMaxNodes bytes.
Grammar choice_grammar(std::span<const std::string> choices, const StopToken& stop = {});
// The choices given as a JSON array of strings (ResponseFormat's text of them); Error when
// it is not one.
Grammar choice_grammar(std::string_view choices_json, const StopToken& stop = {});

}  // namespace pagedgen
