// The template lexer: text and tags first (whitespace control decided there), then the
// tokens inside each tag.
#include "jinja/lexer.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "jinja/template.h"
#include "jinja/string_literal.h"
#include "jinja/unicode_text.h"

namespace pagedgen::jinja {

namespace {

// jinja2 reads the source with its newlines as "\n" and without one trailing newline.
std::string normalize_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::size_t python_rstrip_length(std::string_view text) { return strip(text, StripSide::kRight).size(); }

std::size_t skip_python_space(std::string_view text, std::size_t pos) {
  while (pos < text.size()) {
    const CodePoint cp = decode_at(text, pos);
    if (!is_python_space(cp.value)) break;
    pos += cp.length;
  }
  return pos;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : source_(normalize_source(source)) {}

  std::vector<Token> run() {
    while (pos_ < source_.size()) lex_text_and_tag();
    tokens_.push_back({TokenKind::kEnd, line_, ""});
    return std::move(tokens_);
  }

 private:
  void advance_to(std::size_t pos) {
    line_ += static_cast<int>(std::count(source_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                         source_.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
    pos_ = pos;
  }

  void emit_text(std::string_view text) {
    if (!text.empty()) tokens_.push_back({TokenKind::kText, line_, std::string(text)});
  }

  // The text up to the next tag, whitespace-controlled, then the tag.
  void lex_text_and_tag() {
    const std::size_t open = find_tag(pos_);
    std::string_view text = std::string_view(source_).substr(pos_, open - pos_);
    if (open == source_.size()) {
      emit_text(text);
      advance_to(open);
      return;
    }
    const char kind = source_[open + 1];
    const char sign = open + 2 < source_.size() ? source_[open + 2] : '\0';
    text = controlled_text(text, sign, kind != '{');
    const int text_line = line_;
    advance_to(open);
    if (!text.empty()) tokens_.push_back({TokenKind::kText, text_line, std::string(text)});
    const std::size_t after = open + 2 + (sign == '-' || sign == '+' ? 1 : 0);
    if (kind == '#') return lex_comment(after);
    if (kind == '%' && lex_raw(after)) return;
    lex_tag(after, kind == '{');
  }

  // The text before a tag as the tag's whitespace control leaves it: `-` strips its trailing
  // whitespace, lstrip_blocks (block and comment tags, unless `+`) the spaces that start its
  // last line.
  std::string_view controlled_text(std::string_view text, char sign, bool block) const {
    if (sign == '-') return text.substr(0, python_rstrip_length(text));
    if (sign != '+' && block) return lstrip_block(text);
    return text;
  }

  std::size_t find_tag(std::size_t from) const {
    for (std::size_t i = source_.find('{', from); i != std::string::npos; i = source_.find('{', i + 1)) {
      if (i + 1 < source_.size() && std::strchr("{%#", source_[i + 1]) != nullptr) return i;
    }
    return source_.size();
  }

  // lstrip_blocks: spaces between a line's start and a block or comment tag go.
  std::string_view lstrip_block(std::string_view text) const {
    const std::size_t newline = text.rfind('\n');
    const std::size_t line_start = newline == std::string_view::npos ? 0 : newline + 1;
    if (line_start == 0 && !line_starting_) return text;
    if (skip_python_space(text, line_start) != text.size()) return text;
    return text.substr(0, line_start);
  }

  // After a block or comment end: `-` strips all whitespace, trim_blocks one newline.
  void finish_block_end(std::size_t after_end, char sign) {
    std::size_t pos = after_end;
    if (sign == '-') {
      pos = skip_python_space(source_, pos);
    } else if (sign != '+' && pos < source_.size() && source_[pos] == '\n') {
      ++pos;
    }
    line_starting_ = pos > 0 && source_[pos - 1] == '\n';
    advance_to(pos);
  }

  void lex_comment(std::size_t after) {
    const std::size_t close = source_.find("#}", after);
    if (close == std::string::npos) throw TemplateError(line_, "unclosed comment: no #} before the end");
    const char sign =
        close > after && (source_[close - 1] == '-' || source_[close - 1] == '+') ? source_[close - 1] : '\0';
    finish_block_end(close + 2, sign);
  }

  // `{% raw %}...{% endraw %}`: the text inside as it is. Returns false for another tag.
  bool lex_raw(std::size_t after) {
    std::size_t pos = skip_python_space(source_, after);
    if (source_.compare(pos, 3, "raw") != 0) return false;
    pos = skip_python_space(source_, pos + 3);
    const bool strip_after = source_.compare(pos, 3, "-%}") == 0;
    if (!strip_after && source_.compare(pos, 2, "%}") != 0) return false;
    pos += strip_after ? 3 : 2;
    if (strip_after) pos = skip_python_space(source_, pos);
    line_starting_ = source_[pos - 1] == '\n';
    advance_to(pos);
    for (std::size_t open = source_.find("{%", pos); open != std::string::npos; open = source_.find("{%", open + 1)) {
      std::size_t at = open + 2;
      const char sign = at < source_.size() && (source_[at] == '-' || source_[at] == '+') ? source_[at++] : '\0';
      at = skip_python_space(source_, at);
      if (source_.compare(at, 6, "endraw") != 0) continue;
      at = skip_python_space(source_, at + 6);
      const char end_sign = at < source_.size() && (source_[at] == '-' || source_[at] == '+') ? source_[at++] : '\0';
      if (source_.compare(at, 2, "%}") != 0) continue;
      emit_text(controlled_text(std::string_view(source_).substr(pos, open - pos), sign, true));
      advance_to(open);
      finish_block_end(at + 2, end_sign);
      return true;
    }
    throw TemplateError(line_, "unclosed {% raw %}: no {% endraw %} before the end");
  }

  void lex_tag(std::size_t after, bool variable) {
    tokens_.push_back({variable ? TokenKind::kVariableBegin : TokenKind::kBlockBegin, line_, ""});
    const int open_line = line_;
    advance_to(after);
    std::vector<char> brackets;
    for (;;) {
      advance_to(skip_python_space(source_, pos_));
      if (pos_ >= source_.size())
        throw TemplateError(open_line,
                            variable ? "unclosed {{: no }} before the end" : "unclosed {%: no %} before the end");
      if (brackets.empty() && lex_tag_end(variable)) return;
      lex_token(brackets);
    }
  }

  bool lex_tag_end(bool variable) {
    const char close = variable ? '}' : '%';
    const char sign = source_[pos_] == '-' || source_[pos_] == '+' ? source_[pos_] : '\0';
    const std::size_t at = pos_ + (sign != '\0' ? 1 : 0);
    if (at + 1 >= source_.size() || source_[at] != close || source_[at + 1] != '}') return false;
    if (variable && sign == '+') return false;  // `+}}` is an operator then a tag end, as in jinja2
    tokens_.push_back({variable ? TokenKind::kVariableEnd : TokenKind::kBlockEnd, line_, ""});
    if (variable) {
      std::size_t pos = at + 2;
      if (sign == '-') pos = skip_python_space(source_, pos);
      advance_to(pos);
      line_starting_ = pos > 0 && source_[pos - 1] == '\n';
    } else {
      finish_block_end(at + 2, sign);
    }
    return true;
  }

  void lex_token(std::vector<char>& brackets);
  void lex_number();

  std::string source_;
  std::size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;  // the last tag ended a line (lstrip_blocks then applies at 0)
  std::vector<Token> tokens_;
};

bool is_name_start(unsigned char c) { return std::isalpha(c) || c == '_' || c >= 0x80; }
bool is_name_char(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

void Lexer::lex_token(std::vector<char>& brackets) {
  const unsigned char c = static_cast<unsigned char>(source_[pos_]);
  if (std::isdigit(c)) return lex_number();
  if (is_name_start(c)) {
    std::size_t end = pos_;
    while (end < source_.size() && is_name_char(static_cast<unsigned char>(source_[end]))) ++end;
    tokens_.push_back({TokenKind::kName, line_, source_.substr(pos_, end - pos_)});
    return advance_to(end);
  }
  if (c == '\'' || c == '"') {
    const StringLiteral literal = read_string_literal(source_, pos_);
    if (!literal.closed) throw TemplateError(line_, "unclosed string literal");
    tokens_.push_back({TokenKind::kString, line_, literal.value});
    return advance_to(literal.end);
  }
  static constexpr std::string_view kTwoChar[] = {"//", "**", "==", "!=", ">=", "<="};
  for (std::string_view op : kTwoChar) {
    if (source_.compare(pos_, 2, op) == 0) {
      tokens_.push_back({TokenKind::kOperator, line_, std::string(op)});
      return advance_to(pos_ + 2);
    }
  }
  if (std::strchr("+-/*%~[](){}><=.:|,;", c) == nullptr || c == '\0')
    throw TemplateError(line_, fmt::format("unexpected character '{}' in a tag", static_cast<char>(c)));
  if (c == '(' || c == '[' || c == '{') brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
  if (c == ')' || c == ']' || c == '}') {
    if (brackets.empty() || brackets.back() != static_cast<char>(c))
      throw TemplateError(line_, fmt::format("unexpected '{}'", static_cast<char>(c)));
    brackets.pop_back();
  }
  tokens_.push_back({TokenKind::kOperator, line_, std::string(1, static_cast<char>(c))});
  advance_to(pos_ + 1);
}

void Lexer::lex_number() {
  const bool after_dot = pos_ > 0 && source_[pos_ - 1] == '.';  // `x.0.1`: items, not a float
  const NumberLiteral number = read_number_literal(source_, pos_, !after_dot);
  Token token{number.is_float ? TokenKind::kFloat : TokenKind::kInteger, line_, ""};
  if (number.out_of_range) throw TemplateError(line_, "integer literal out of range (more than 64 bits)");
  token.integer = number.integer;
  token.number = number.number;
  tokens_.push_back(token);
  advance_to(number.end);
}

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace pagedgen::jinja
