// Byte-level BPE pre-tokenizer: splits text into words with an ordered list of PCRE2
// patterns (UTF + Unicode properties), each applied to every piece the previous one
// produced; matches and the text between matches both become pieces (HF "Isolated"), and
// an empty match is a cut between two pieces. gguf_pretokenizer.h holds the GGUF presets.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pagedgen {

enum class SplitBehavior {
  Isolated,  // matches are pieces of their own
  Removed,   // matches are dropped
};

struct SplitRule {
  std::string pattern;
  bool literal = false;  // `pattern` is plain text, not a regex (HF Split "String")
  SplitBehavior behavior = SplitBehavior::Isolated;
};

class CompiledPattern;

class PreTokenizer {
 public:
  PreTokenizer() = default;  // no rules: the whole text is one piece
  // Compiles every rule. Throws Error naming the pattern when PCRE2 rejects it.
  explicit PreTokenizer(std::vector<SplitRule> rules, bool add_prefix_space = false);

  // Appends the pieces of `text` (views into it, none empty) to `pieces`. `text` must be
  // valid UTF-8. A pattern that matches the empty string cuts the piece there (as HF
  // tokenizers and llama.cpp do), so a lookahead alone can split digit runs.
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

  // HF ByteLevel add_prefix_space: a space is put before text that does not start with one.
  bool add_prefix_space() const { return add_prefix_space_; }
  const std::vector<SplitRule>& rules() const { return rules_; }

 private:
  std::vector<SplitRule> rules_;
  std::vector<std::shared_ptr<const CompiledPattern>> patterns_;  // immutable, shareable
  bool add_prefix_space_ = false;
};

// The pattern HF's ByteLevel pre-tokenizer uses when use_regex is true (GPT-2's).
std::string_view gpt2_split_pattern();

}  // namespace pagedgen
