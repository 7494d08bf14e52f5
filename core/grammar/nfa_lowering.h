// Lowers CharNfa rules (char_nfa.h) to grammar rules: each code point edge becomes the
// bytes that write it (UTF-8, or inside a JSON string its JSON spelling), and each rule is
// made deterministic over bytes and rule calls by subset construction, so a matcher
// standing in it has one node, not a set. Rules that may match the empty text are called
// through a non-empty version with a skip beside the call (the grammar's rules must
// consume before they end); only the start rule may then match the empty text.
//
//   GBNF  ws ::= [ ]*     value ::= "x" ws     ->   value: 'x' (call ws+ | skip) end
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/char_nfa.h"
#include "grammar/grammar_builder.h"
#include "util/stop_token.h"

namespace pagedgen {

enum class CharSpelling : uint8_t {
  kUtf8,        // each character as its UTF-8 bytes
  kJsonString,  // as inside a JSON string: '"', '\' and controls escaped (\n, \u001f), the rest UTF-8
};

struct NfaRule {
  std::string name;  // for messages
  NfaFragment body;
};

struct NfaLowering {
  std::string_view what;  // names the input in refusals: "the regex", "the grammar"
  CharSpelling spelling = CharSpelling::kUtf8;
  // Characters (calls count as one) the start rule's text must have; a JSON string's
  // length in code points.
  uint64_t min_chars = 0;
  std::optional<uint64_t> max_chars;
  bool quoted = false;  // the start rule is a JSON string: '"' before and after the text
};

// Adds `rules` (all over `nfa`; calls name indices into `rules`) to `builder` and returns
// the rule of rules[start]. Throws UnsupportedSchemaError when a rule's deterministic
// automaton would pass kMaxDfaStates states (or all of them the builder's cap), Stopped
// when `stop` asks.
RuleId lower_nfa_rules(GrammarBuilder& builder, const CharNfa& nfa, std::span<const NfaRule> rules, uint32_t start,
                       const NfaLowering& lowering, const StopToken& stop = {});

// States of one rule's deterministic automaton (each distinct one costs a walk of the token
// trie when masks are built; all rules together stay within GrammarBuilder::kMaxNodes);
// each holds the set of NFA states it stands for, so the sets' total size over the
// lowering is capped too.
inline constexpr size_t kMaxDfaStates = size_t{1} << 14;
inline constexpr size_t kMaxDfaSetEntries = size_t{1} << 23;

}  // namespace pagedgen
