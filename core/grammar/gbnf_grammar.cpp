// One pass over the text with the open groups on an explicit stack (no nesting deepens the
// C++ stack): each rule's body becomes a CharNfa fragment, a rule name a call, then the
// rules are lowered together (nfa_lowering.h) from `root`.
#include "grammar/gbnf_grammar.h"

#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "grammar/char_nfa.h"
#include "grammar/grammar_builder.h"
#include "grammar/grammar_error.h"
#include "grammar/nfa_lowering.h"
#include "grammar/regex_char_sets.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace pagedgen {
namespace {

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text), nfa_("the grammar") {}

  Grammar compile(const StopToken& stop) {
    for (skip_space(); pos_ < text_.size(); skip_space()) {
      stop.throw_if_stopped();
      parse_rule();
    }
    for (size_t i = 0; i < rules_.size(); ++i) {
      if (!defined_[i])
        fail("the grammar uses rule '{}' but never defines it; add '{} ::= ...'", rules_[i].name, rules_[i].name);
    }
    const auto root = rule_index_.find("root");
    if (root == rule_index_.end() || !defined_[root->second])
      fail("the grammar has no rule 'root' (where the text starts); add 'root ::= ...'");
    GrammarBuilder builder(GrammarSource::kGbnf);
    NfaLowering lowering;
    lowering.what = "the grammar";
    const RuleId start = lower_nfa_rules(builder, nfa_, rules_, root->second, lowering, stop);
    return builder.finish(start, stop);
  }

 private:
  struct Group {
    NfaStateId first_state;
    std::vector<std::vector<NfaFragment>> alternatives;  // each a sequence of atoms
  };

  [[noreturn]] void malformed(std::string_view why) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      column = text_[i] == '\n' ? 1 : column + 1;
      line += text_[i] == '\n';
    }
    fail("the grammar is malformed at line {}, column {}: {}", line, column, why);
  }

  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  void skip_space() {
    while (pos_ < text_.size()) {
      if (text_[pos_] == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(text_[pos_]))) {
        ++pos_;
      } else {
        return;
      }
    }
  }

  std::string_view read_name() {
    const size_t start = pos_;
    while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  // Whether a rule definition (`name ::=`) starts at pos_: the end of the body before it.
  bool at_definition() {
    const size_t saved = pos_;
    const bool found = !read_name().empty() && (skip_space(), text_.substr(pos_).starts_with("::="));
    pos_ = saved;
    return found;
  }

  uint32_t rule_index(std::string_view name) {
    const auto [it, added] = rule_index_.emplace(std::string(name), static_cast<uint32_t>(rules_.size()));
    if (added) {
      rules_.push_back({std::string(name), {}});
      defined_.push_back(0);
    }
    return it->second;
  }

  void parse_rule() {
    const std::string_view name = read_name();
    if (name.empty()) malformed("expected a rule name (letters, digits, '-' and '_')");
    skip_space();
    if (!text_.substr(pos_).starts_with("::="))
      malformed(
          fmt::format("expected '::=' after '{}' (grammars are GBNF, llama.cpp's format; Lark's 'name: ...' "
                      "is not read)",
                      name));
    pos_ += 3;
    const uint32_t index = rule_index(name);
    if (defined_[index]) malformed(fmt::format("rule '{}' is defined twice", name));
    defined_[index] = 1;
    const NfaFragment body = parse_body();
    rules_[index].body = body;
  }

  NfaFragment parse_body() {
    groups_.push_back({static_cast<NfaStateId>(nfa_.num_states()), {{}}});
    last_is_atom_ = false;
    for (skip_space(); pos_ < text_.size() && !(groups_.size() == 1 && at_definition()); skip_space()) step();
    if (groups_.size() > 1) malformed("a group is not closed; add ')'");
    const NfaFragment body = group_fragment(groups_.back());
    groups_.pop_back();
    return body;
  }

  void add_atom(NfaFragment atom) {
    groups_.back().alternatives.back().push_back(atom);
    last_is_atom_ = true;
  }

  void step() {
    const char c = text_[pos_];
    if (c == '|') {
      ++pos_;
      groups_.back().alternatives.emplace_back();
      last_is_atom_ = false;
    } else if (c == '(') {
      ++pos_;
      groups_.push_back({static_cast<NfaStateId>(nfa_.num_states()), {{}}});
      last_is_atom_ = false;
    } else if (c == ')') {
      if (groups_.size() == 1) malformed("')' closes no group");
      ++pos_;
      Group group = std::move(groups_.back());
      groups_.pop_back();
      add_atom(group_fragment(group));
    } else if (c == '"') {
      add_atom(literal());
    } else if (c == '[') {
      add_atom(char_class());
    } else if (c == '.') {
      ++pos_;
      add_atom(nfa_.ranges(any_char_ranges()));
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      quantify();
    } else if (c == '<') {
      refuse_schema(
          "the grammar uses a token reference (<...>) at offset {}, which guided_grammar does not read; "
          "spell the text instead",
          pos_);
    } else if (is_name_char(c)) {
      add_atom(nfa_.call(rule_index(read_name())));
    } else {
      malformed(fmt::format("unexpected '{}'", c));
    }
  }

  NfaFragment group_fragment(const Group& group) {
    std::vector<NfaFragment> alternatives;
    for (const std::vector<NfaFragment>& atoms : group.alternatives) {
      if (atoms.empty()) {
        alternatives.push_back(nfa_.empty());
        continue;
      }
      NfaFragment sequence = atoms.front();
      for (size_t i = 1; i < atoms.size(); ++i) sequence = nfa_.concat(sequence, atoms[i]);
      alternatives.push_back(sequence);
    }
    NfaFragment out = alternatives.size() == 1 ? alternatives.front() : nfa_.alternate(alternatives);
    out.first_state = group.first_state;
    return out;
  }

  std::optional<uint64_t> read_number() {
    const size_t start = pos_;
    uint64_t value = 0;
    for (; pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])); ++pos_)
      value = std::min<uint64_t>(value * 10 + static_cast<uint64_t>(text_[pos_] - '0'), uint64_t{1} << 40);
    return pos_ > start ? std::optional(value) : std::nullopt;
  }

  void quantify() {
    if (!last_is_atom_) malformed("a repetition with nothing to repeat");
    uint64_t min_count = 0;
    std::optional<uint64_t> max_count;
    const char c = text_[pos_++];
    if (c == '{') {
      skip_space();
      min_count = read_number().value_or(0);
      skip_space();
      max_count = min_count;
      if (at(',')) {
        ++pos_;
        skip_space();
        max_count = read_number();
        skip_space();
      }
      if (!at('}')) malformed("expected '}' to close a repetition {m,n}");
      ++pos_;
      if (max_count && *max_count < min_count) malformed("a repetition {m,n} with n below m");
    } else {
      min_count = c == '+' ? 1 : 0;
      if (c == '?') max_count = 1;
    }
    NfaFragment& atom = groups_.back().alternatives.back().back();
    atom = nfa_.repeat(atom, min_count, max_count);
    last_is_atom_ = false;
  }

  // One character of a literal or class at pos_ (an escape or UTF-8), read past.
  char32_t read_char() {
    if (text_[pos_] != '\\') {
      const Utf8Step step = utf8_next(text_, pos_);
      if (step.status != Utf8Status::Valid) malformed("the grammar is not valid UTF-8");
      pos_ += step.length;
      return step.code_point;
    }
    if (++pos_ >= text_.size()) malformed("'\\' ends the grammar");
    const char c = text_[pos_++];
    switch (c) {
      case 'n':
        return U'\n';
      case 'r':
        return U'\r';
      case 't':
        return U'\t';
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-':
      case '^':
        return static_cast<char32_t>(c);
      case 'x':
        return hex_char(2);
      case 'u':
        return hex_char(4);
      case 'U':
        return hex_char(8);
      default:
        break;
    }
    --pos_;
    malformed(fmt::format("unknown escape '\\{}'", c));
  }

  char32_t hex_char(size_t num_digits) {
    uint64_t value = 0;
    for (size_t i = 0; i < num_digits; ++i, ++pos_) {
      const char d = pos_ < text_.size() ? text_[pos_] : '\0';
      if (!std::isxdigit(static_cast<unsigned char>(d))) malformed(fmt::format("expected {} hex digits", num_digits));
      value = value * 16 + static_cast<uint64_t>(d <= '9' ? d - '0' : (d | 0x20) - 'a' + 10);
    }
    if (value > kMaxCodePoint || (value >= 0xD800 && value <= 0xDFFF))
      malformed(fmt::format("U+{:X} is no character (a surrogate, or past U+10FFFF)", value));
    return static_cast<char32_t>(value);
  }

  NfaFragment literal() {
    ++pos_;
    NfaFragment out = nfa_.empty();
    while (!at('"')) {
      if (pos_ >= text_.size()) malformed("a literal is not closed; add '\"'");
      const char32_t c = read_char();
      const CodePointRange range{c, c};
      out = nfa_.concat(out, nfa_.ranges({&range, 1}));
    }
    ++pos_;
    return out;
  }

  NfaFragment char_class() {
    ++pos_;
    const bool negated = at('^');
    if (negated) ++pos_;
    std::vector<CodePointRange> set;
    while (!at(']')) {
      if (pos_ >= text_.size()) malformed("a class is not closed; add ']'");
      const char32_t first = read_char();
      char32_t last = first;
      if (at('-') && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        last = read_char();
        if (last < first) malformed("a class range out of order");
      }
      set.push_back({first, last});
    }
    ++pos_;
    return nfa_.ranges(negated ? complement_ranges(set) : set);
  }

  std::string_view text_;
  size_t pos_ = 0;
  CharNfa nfa_;
  std::vector<NfaRule> rules_;  // [rule index]
  std::vector<char> defined_;   // [rule index]
  std::map<std::string, uint32_t, std::less<>> rule_index_;
  std::vector<Group> groups_;  // the open groups of the body being read, its whole body first
  bool last_is_atom_ = false;
};

}  // namespace

Grammar gbnf_grammar(std::string_view text, const StopToken& stop) { return GbnfParser(text).compile(stop); }

}  // namespace pagedgen
