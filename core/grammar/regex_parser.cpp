// One pass over the pattern: atoms go into the current alternative of the innermost open
// group; a quantifier replaces the last atom by its repeat; ')' closes a group into one
// atom of its parent. Sequences are joined only when their group closes, so the last atom
// is always the last fragment built (what CharNfa::repeat copies).
#include "grammar/regex_parser.h"

#include <cctype>
#include <optional>
#include <vector>

#include "grammar/grammar_error.h"
#include "grammar/regex_char_sets.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace pagedgen {
namespace {

// A class item: one character, or a class escape's set.
struct ClassItem {
  char32_t code_point = 0;
  std::vector<CodePointRange> set;
};

bool is_hex_digit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

class RegexParser {
 public:
  RegexParser(CharNfa& nfa, std::string_view pattern, RegexMatch match) : nfa_(nfa), pattern_(pattern), match_(match) {}

  NfaFragment parse() {
    groups_.push_back({static_cast<NfaStateId>(nfa_.num_states()), {{}}});
    while (pos_ < pattern_.size()) step();
    if (groups_.size() > 1) malformed("a group is not closed; add ')'");
    return top_level();
  }

 private:
  struct Alternative {
    std::vector<NfaFragment> atoms;
    bool anchored_start = false;  // ^ before it
    bool anchored_end = false;    // $ after it
  };
  struct Group {
    NfaStateId first_state;  // every state built since it opened is its own
    std::vector<Alternative> alternatives;
  };

  [[noreturn]] void malformed(std::string_view why) const {
    fail("the regex is malformed at offset {}: {}", pos_, why);
  }
  [[noreturn]] void unsupported(std::string_view feature) const {
    refuse_schema(
        "the regex uses {} at offset {}, which structured outputs cannot enforce; rewrite the pattern "
        "without it",
        feature, pos_);
  }

  bool at(std::string_view text) const { return pattern_.substr(pos_).starts_with(text); }
  Alternative& current() { return groups_.back().alternatives.back(); }
  void add_atom(NfaFragment atom) {
    current().atoms.push_back(atom);
    last_is_atom_ = true;
  }
  void add_char(char32_t c) {
    const CodePointRange range{c, c};
    add_atom(nfa_.ranges({&range, 1}));
  }

  void step() {
    switch (pattern_[pos_]) {
      case '(':
        return open_group();
      case ')':
        return close_group();
      case '|':
        ++pos_;
        groups_.back().alternatives.emplace_back();
        last_is_atom_ = false;
        return;
      case '*':
      case '+':
      case '?':
      case '{':
        return quantify();
      case '^':
      case '$':
        return anchor();
      case '.':
        ++pos_;
        return add_atom(nfa_.ranges(dot_ranges()));
      case '[':
        return add_atom(char_class());
      case '\\':
        return add_atom(escape_atom());
      default:
        return add_char(next_code_point());
    }
  }

  char32_t next_code_point() {
    const Utf8Step step = utf8_next(pattern_, pos_);
    if (step.status != Utf8Status::Valid) malformed("the pattern is not valid UTF-8");
    pos_ += step.length;
    return step.code_point;
  }

  void open_group() {
    if (at("(?=") || at("(?!") || at("(?<=") || at("(?<!")) unsupported("lookaround ((?=, (?!, (?<=, (?<!)");
    if (at("(?:")) {
      pos_ += 3;
    } else if (at("(?<")) {
      const size_t close = pattern_.find('>', pos_);
      if (close == std::string_view::npos) malformed("a group name is not closed; add '>'");
      pos_ = close + 1;
    } else if (at("(?")) {
      unsupported("a group modifier ((?flags))");
    } else {
      ++pos_;
    }
    groups_.push_back({static_cast<NfaStateId>(nfa_.num_states()), {{}}});
    last_is_atom_ = false;
  }

  void close_group() {
    if (groups_.size() == 1) malformed("')' closes no group");
    ++pos_;
    Group group = std::move(groups_.back());
    groups_.pop_back();
    add_atom(group_fragment(group));
  }

  NfaFragment sequence(const Alternative& alternative) {
    if (alternative.atoms.empty()) return nfa_.empty();
    NfaFragment out = alternative.atoms.front();
    for (size_t i = 1; i < alternative.atoms.size(); ++i) out = nfa_.concat(out, alternative.atoms[i]);
    return out;
  }

  NfaFragment group_fragment(const Group& group) {
    std::vector<NfaFragment> alternatives;
    for (const Alternative& a : group.alternatives) alternatives.push_back(sequence(a));
    NfaFragment out = alternatives.size() == 1 ? alternatives.front() : nfa_.alternate(alternatives);
    out.first_state = group.first_state;
    return out;
  }

  NfaFragment top_level() {
    if (match_ == RegexMatch::kWhole) return group_fragment(groups_.front());
    std::vector<NfaFragment> alternatives;
    for (const Alternative& a : groups_.front().alternatives) {
      NfaFragment x = sequence(a);
      if (!a.anchored_start) x = nfa_.concat(any_text(), x);
      if (!a.anchored_end) x = nfa_.concat(x, any_text());
      alternatives.push_back(x);
    }
    return alternatives.size() == 1 ? alternatives.front() : nfa_.alternate(alternatives);
  }

  NfaFragment any_text() { return nfa_.repeat(nfa_.ranges(any_char_ranges()), 0, std::nullopt); }

  void anchor() {
    const bool top = groups_.size() == 1;
    if (pattern_[pos_] == '^' && top && current().atoms.empty() && !current().anchored_start) {
      current().anchored_start = true;
    } else if (pattern_[pos_] == '$' && top && (pos_ + 1 == pattern_.size() || pattern_[pos_ + 1] == '|')) {
      current().anchored_end = true;
    } else {
      unsupported(
          "an anchor (^ or $) inside the text (anchors may only start or end the pattern or a top-level "
          "alternative)");
    }
    ++pos_;
    last_is_atom_ = false;
  }

  // {n}, {n,} or {n,m} at pos_, read past; nullopt (pos_ unmoved) when the braces are not
  // one of those (then '{' is a literal, as ECMA-262's Annex B reads it).
  std::optional<std::pair<uint64_t, std::optional<uint64_t>>> read_bounds() {
    size_t p = pos_ + 1;
    const auto number = [&]() -> std::optional<uint64_t> {
      const size_t start = p;
      uint64_t value = 0;
      for (; p < pattern_.size() && pattern_[p] >= '0' && pattern_[p] <= '9'; ++p)
        value = std::min<uint64_t>(value * 10 + static_cast<uint64_t>(pattern_[p] - '0'), uint64_t{1} << 40);
      return p > start ? std::optional(value) : std::nullopt;
    };
    const auto min_count = number();
    if (!min_count) return std::nullopt;
    std::optional<uint64_t> max_count = min_count;
    if (p < pattern_.size() && pattern_[p] == ',') {
      ++p;
      max_count = number();
    }
    if (p >= pattern_.size() || pattern_[p] != '}') return std::nullopt;
    pos_ = p + 1;
    return std::pair{*min_count, max_count};
  }

  void quantify() {
    uint64_t min_count = 0;
    std::optional<uint64_t> max_count;
    if (pattern_[pos_] == '{') {
      const auto read = read_bounds();
      if (!read) {
        ++pos_;
        return add_char('{');
      }
      min_count = read->first;
      max_count = read->second;
      if (max_count && *max_count < min_count) malformed("a quantifier {n,m} with m below n");
    } else {
      const char c = pattern_[pos_++];
      min_count = c == '+' ? 1 : 0;
      if (c == '?') max_count = 1;
    }
    if (!last_is_atom_) malformed("a quantifier with nothing to repeat");
    if (pos_ < pattern_.size() && pattern_[pos_] == '?') ++pos_;  // lazy: the same texts match
    NfaFragment& atom = current().atoms.back();
    atom = nfa_.repeat(atom, min_count, max_count);
    last_is_atom_ = false;
  }

  NfaFragment escape_atom() {
    ++pos_;
    if (pos_ >= pattern_.size()) malformed("'\\' ends the pattern");
    const char c = pattern_[pos_];
    if (auto set = class_escape_ranges(c); !set.empty()) {
      ++pos_;
      return nfa_.ranges(set);
    }
    --pos_;  // refusals point at the '\\'
    if (c == 'b' || c == 'B') unsupported("a word boundary (\\b, \\B)");
    if (c >= '1' && c <= '9') unsupported("a backreference (\\1 to \\9)");
    if (c == 'k') unsupported("a named backreference (\\k)");
    ++pos_;
    const char32_t code_point = escaped_char();
    const CodePointRange range{code_point, code_point};
    return nfa_.ranges({&range, 1});
  }

  // The character of the escape whose letter is at pos_ (after '\'), read past.
  char32_t escaped_char() {
    const char c = pattern_[pos_];
    switch (c) {
      case 'n':
        return ++pos_, U'\n';
      case 'r':
        return ++pos_, U'\r';
      case 't':
        return ++pos_, U'\t';
      case 'f':
        return ++pos_, U'\f';
      case 'v':
        return ++pos_, U'\v';
      case '0':
        if (pos_ + 1 < pattern_.size() && pattern_[pos_ + 1] >= '0' && pattern_[pos_ + 1] <= '9')
          unsupported("an octal escape or backreference (\\0 followed by a digit)");
        return ++pos_, U'\0';
      case 'c':
        if (pos_ + 1 >= pattern_.size() || !std::isalpha(static_cast<unsigned char>(pattern_[pos_ + 1])))
          malformed("\\c needs a letter after it");
        pos_ += 2;
        return static_cast<char32_t>(pattern_[pos_ - 1] % 32);
      case 'x':
        return hex_escape(2);
      case 'u':
        return unicode_escape();
      case 'p':
      case 'P':
        unsupported("a Unicode property escape (\\p, \\P)");
      default:
        break;
    }
    if (static_cast<unsigned char>(c) >= 0x80 || !std::isalnum(static_cast<unsigned char>(c))) return next_code_point();
    malformed(fmt::format("unknown escape \\{}", c));
  }

  // \xHH or \uHHHH whose letter is at pos_.
  char32_t hex_escape(size_t num_digits) {
    if (pos_ + num_digits >= pattern_.size()) malformed(fmt::format("a hex escape needs {} hex digits", num_digits));
    char32_t value = 0;
    for (size_t i = 1; i <= num_digits; ++i) {
      const char d = pattern_[pos_ + i];
      if (!is_hex_digit(d)) malformed(fmt::format("a hex escape needs {} hex digits", num_digits));
      value = value * 16 + static_cast<char32_t>(d <= '9' ? d - '0' : (d | 0x20) - 'a' + 10);
    }
    pos_ += num_digits + 1;
    return value;
  }

  char32_t unicode_escape() {
    if (at("u{")) unsupported("a \\u{...} escape (it needs the u flag)");
    const char32_t high = hex_escape(4);
    if (high < 0xD800 || high > 0xDFFF) return high;
    if (high <= 0xDBFF && at("\\u")) {
      ++pos_;
      const size_t before = pos_;
      const char32_t low = hex_escape(4);
      if (low >= 0xDC00 && low <= 0xDFFF) return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
      pos_ = before - 1;
    }
    unsupported("a lone surrogate escape (\\uD800 to \\uDFFF, no character)");
  }

  ClassItem class_item() {
    if (pattern_[pos_] != '\\') return {next_code_point(), {}};
    ++pos_;
    if (pos_ >= pattern_.size()) malformed("'\\' ends the pattern");
    const char c = pattern_[pos_];
    if (auto set = class_escape_ranges(c); !set.empty()) {
      ++pos_;
      return {0, std::move(set)};
    }
    if (c == 'b') return ++pos_, ClassItem{U'\b', {}};  // backspace inside a class
    if (c == '-') return ++pos_, ClassItem{U'-', {}};
    if (c >= '1' && c <= '9') unsupported("a backreference (\\1 to \\9)");
    return {escaped_char(), {}};
  }

  NfaFragment char_class() {
    ++pos_;
    const bool negated = pos_ < pattern_.size() && pattern_[pos_] == '^';
    if (negated) ++pos_;
    std::vector<CodePointRange> set;
    for (;;) {
      if (pos_ >= pattern_.size()) malformed("a class is not closed; add ']'");
      if (pattern_[pos_] == ']') break;
      ClassItem first = class_item();
      if (!first.set.empty()) {
        set.insert(set.end(), first.set.begin(), first.set.end());
        continue;
      }
      if (pos_ + 1 < pattern_.size() && pattern_[pos_] == '-' && pattern_[pos_ + 1] != ']') {
        ++pos_;
        const ClassItem last = class_item();
        if (!last.set.empty()) malformed("a class range ends in a class escape");
        if (last.code_point < first.code_point) malformed("a class range out of order");
        set.push_back({first.code_point, last.code_point});
      } else {
        set.push_back({first.code_point, first.code_point});
      }
    }
    ++pos_;
    return nfa_.ranges(negated ? complement_ranges(set) : set);
  }

  CharNfa& nfa_;
  std::string_view pattern_;
  RegexMatch match_;
  size_t pos_ = 0;
  std::vector<Group> groups_;  // the open groups, outermost (the whole pattern) first
  bool last_is_atom_ = false;  // a quantifier may follow
};

}  // namespace

NfaFragment parse_regex(CharNfa& nfa, std::string_view pattern, RegexMatch match) {
  return RegexParser(nfa, pattern, match).parse();
}

}  // namespace pagedgen
