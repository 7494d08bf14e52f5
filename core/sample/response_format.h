// ResponseFormat: what a request's text must be: free text, any JSON object, a value of one
// JSON Schema (OpenAI's response_format), or vLLM's structured outputs (guided_regex,
// guided_choice, guided_grammar, structured_outputs): a text the regex matches whole, one
// of a list of texts, or a text of a GBNF grammar. For all but free text the engine
// compiles a grammar (core/grammar) and masks the tokens of every step with it, so the text
// is always in its language (unless max_tokens cuts it: finish_reason "length").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "grammar/grammar.h"
#include "util/stop_token.h"

namespace pagedgen {

struct ResponseFormat {
  enum class Type : uint8_t { kText, kJsonObject, kJsonSchema, kRegex, kChoice, kGrammar };
  Type type = Type::kText;
  // The constraint as text, which identifies its compiled grammar: kJsonSchema the schema
  // as compact JSON (no whitespace outside strings), kRegex the pattern, kChoice the
  // choices as a compact JSON array of strings, kGrammar the GBNF text; empty otherwise.
  std::string spec;

  bool is_constrained() const { return type != Type::kText; }
  bool operator==(const ResponseFormat&) const = default;
};

// "text", "json_object", "json_schema", "regex", "choice" or "grammar": the constraint's
// name in messages (response_format's "type" spells the first three so).
std::string_view response_format_type_name(ResponseFormat::Type type);

// The grammar of a constrained `format` (json_grammar.h, regex_grammar.h, gbnf_grammar.h):
// throws what its compiler throws, Stopped when `stop` asks.
Grammar response_format_grammar(const ResponseFormat& format, const StopToken& stop = {});

}  // namespace pagedgen
