// Template source -> tokens, with jinja2's whitespace rules as transformers sets them:
// `{%-`/`-%}` strip whitespace, trim_blocks drops the newline after a block or comment tag,
// lstrip_blocks drops the spaces before one at the start of a line, `+` turns both off, one
// trailing newline of the source is dropped. Raw blocks come out as text; comments vanish.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pagedgen::jinja {

enum class TokenKind {
  kText,           // text between tags
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,    // text: the unescaped value
  kInteger,   // integer
  kFloat,     // number
  kOperator,  // text: "+", "//", "(", ...
  kEnd,
};

struct Token {
  TokenKind kind;
  int line;
  std::string text;
  std::int64_t integer = 0;
  double number = 0;
};

// Throws TemplateError (an unclosed tag, comment or string; a character no token starts with).
std::vector<Token> tokenize(std::string_view source);

}  // namespace pagedgen::jinja
