// Tokens -> the statement tree. Recursive descent over jinja2's grammar; nesting is
// counted (blocks and expressions together) and refused past kMaxNesting, so no template
// can overflow the stack while it is parsed or run.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace pagedgen::jinja {

inline constexpr int kMaxNesting = 200;

// Throws TemplateError.
Body parse_template(std::vector<Token> tokens);

// Fails on the first unknown filter or test where jinja2 refuses it when compiling: anywhere
// but in an if (its tests and the statements directly in it) or a conditional expression,
// where jinja2 fails only if it runs (known_names.cpp).
void check_known_names(const Body& body);

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parse_all();

  // Expressions (parse_expression.cpp).
  ExprPtr parse_expression(bool with_conditional = true);
  ExprPtr parse_tuple(bool with_conditional = true);
  ExprPtr parse_filters(ExprPtr input);  // `| f | g(...)` after input (may be null)

 private:
  // Statements (parse_statement.cpp).
  Body parse_body(std::initializer_list<std::string_view> end_tags);
  std::unique_ptr<Stmt> parse_block_tag();
  std::unique_ptr<Stmt> parse_if(int line);
  std::unique_ptr<Stmt> parse_for(int line);
  std::unique_ptr<Stmt> parse_set(int line);
  std::unique_ptr<Stmt> parse_macro(int line);
  std::unique_ptr<Stmt> parse_call_block(int line);
  std::unique_ptr<Stmt> parse_filter_block(int line);
  std::unique_ptr<Stmt> parse_with(int line);
  std::vector<Parameter> parse_parameters();
  std::vector<std::string> parse_targets();
  void close_tag();                                                        // expects %}
  std::string_view expect_end_tag(std::string_view tag, int opened_line);  // after a body
  Body parse_tag_body(std::string_view tag, int line);                     // `%}`, the body, `{% end<tag> %}`

  // Expression levels (parse_expression.cpp).
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter = true);
  ExprPtr parse_unary_operand() { return parse_unary(true); }
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expression(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_test(ExprPtr node);
  ExprPtr parse_filter(ExprPtr node);
  ExprPtr parse_call(ExprPtr callee);  // at '('
  void parse_call_arguments(Expr& call);
  // `operand (op operand)*` for the given operators, left-associative.
  ExprPtr parse_left_chain(ExprPtr (Parser::*operand)(), std::initializer_list<std::string_view> ops);
  ExprPtr parse_list_literal(int line);
  ExprPtr parse_dict_literal(int line);
  ExprPtr parse_parenthesized(int line);
  ExprPtr parse_literal_token();

  // Tokens.
  const Token& current() const { return tokens_[index_]; }
  const Token& peek(std::size_t ahead = 1) const;
  const Token& next() { return tokens_[index_ < tokens_.size() - 1 ? index_++ : index_]; }
  bool at_operator(std::string_view op) const;
  bool at_name(std::string_view name) const;
  bool skip_operator(std::string_view op);
  bool skip_name(std::string_view name);
  void expect_operator(std::string_view op);
  std::string expect_name();
  [[noreturn]] void fail_here(const std::string& message) const;
  static ExprPtr node(ExprKind kind, int line);

  // Nesting: entered once per level of blocks or expressions.
  class Nested {
   public:
    explicit Nested(Parser& parser);
    ~Nested() { --parser_.nesting_; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;

   private:
    Parser& parser_;
  };

  // A chain of operators (`a + b + c`, `x | f | g`, `x[0][1]`) nests its tree one level per
  // link without recursing: each link counts as a level until the chain is parsed.
  class Chain {
   public:
    explicit Chain(Parser& parser) : parser_(parser) {}
    ~Chain() { parser_.nesting_ -= links_; }
    Chain(const Chain&) = delete;
    Chain& operator=(const Chain&) = delete;
    void link();

   private:
    Parser& parser_;
    int links_ = 0;
  };

  std::vector<Token> tokens_;
  std::size_t index_ = 0;
  int nesting_ = 0;
};

}  // namespace pagedgen::jinja
