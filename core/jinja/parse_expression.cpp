// Expressions, by jinja2's precedence: conditional < or < and < not < comparisons < + - <
// ~ < * / // % < ** < unary - + < filters, tests and calls < attributes and items.
#include <fmt/format.h>

#include "jinja/parser.h"
#include "jinja/template.h"

namespace pagedgen::jinja {

Parser::Nested::Nested(Parser& parser) : parser_(parser) {
  if (++parser_.nesting_ > kMaxNesting)
    parser_.fail_here(fmt::format("nesting deeper than {} levels (blocks and expressions)", kMaxNesting));
}

void Parser::Chain::link() {
  ++links_;
  if (++parser_.nesting_ > kMaxNesting)
    parser_.fail_here(fmt::format("nesting deeper than {} levels (blocks and expressions)", kMaxNesting));
}

const Token& Parser::peek(std::size_t ahead) const { return tokens_[std::min(index_ + ahead, tokens_.size() - 1)]; }

bool Parser::at_operator(std::string_view op) const {
  return current().kind == TokenKind::kOperator && current().text == op;
}

bool Parser::at_name(std::string_view name) const {
  return current().kind == TokenKind::kName && current().text == name;
}

bool Parser::skip_operator(std::string_view op) {
  if (!at_operator(op)) return false;
  next();
  return true;
}

bool Parser::skip_name(std::string_view name) {
  if (!at_name(name)) return false;
  next();
  return true;
}

namespace {

std::string describe(const Token& token) {
  switch (token.kind) {
    case TokenKind::kEnd:
      return "the end of the template";
    case TokenKind::kText:
      return "text";
    case TokenKind::kVariableEnd:
      return "'}}'";
    case TokenKind::kBlockEnd:
      return "'%}'";
    case TokenKind::kString:
      return "a string";
    case TokenKind::kInteger:
    case TokenKind::kFloat:
      return "a number";
    default:
      return "'" + token.text + "'";
  }
}

}  // namespace

void Parser::fail_here(const std::string& message) const { throw TemplateError(current().line, message); }

void Parser::expect_operator(std::string_view op) {
  if (!skip_operator(op)) fail_here(fmt::format("expected '{}', found {}", op, describe(current())));
}

std::string Parser::expect_name() {
  if (current().kind != TokenKind::kName) fail_here(fmt::format("expected a name, found {}", describe(current())));
  return next().text;
}

ExprPtr Parser::node(ExprKind kind, int line) {
  auto expr = std::make_unique<Expr>();
  expr->kind = kind;
  expr->line = line;
  return expr;
}

ExprPtr Parser::parse_expression(bool with_conditional) {
  Nested nested(*this);
  ExprPtr expr = parse_or();
  Chain chain(*this);
  while (with_conditional && at_name("if")) {
    chain.link();
    ExprPtr conditional = node(ExprKind::kConditional, next().line);
    ExprPtr condition = parse_or();
    ExprPtr otherwise = skip_name("else") ? parse_expression() : nullptr;
    conditional->children.push_back(std::move(expr));
    conditional->children.push_back(std::move(condition));
    conditional->children.push_back(std::move(otherwise));
    expr = std::move(conditional);
  }
  return expr;
}

// `a, b` (a tuple) or a single expression.
ExprPtr Parser::parse_tuple(bool with_conditional) {
  const int line = current().line;
  ExprPtr first = parse_expression(with_conditional);
  if (!at_operator(",")) return first;
  ExprPtr tuple = node(ExprKind::kTuple, line);
  tuple->children.push_back(std::move(first));
  while (skip_operator(",")) {
    if (current().kind == TokenKind::kBlockEnd || current().kind == TokenKind::kVariableEnd || at_operator(")")) break;
    tuple->children.push_back(parse_expression(with_conditional));
  }
  return tuple;
}

namespace {

ExprPtr binary(ExprKind kind, std::string op, ExprPtr left, ExprPtr right, int line) {
  auto expr = std::make_unique<Expr>();
  expr->kind = kind;
  expr->line = line;
  expr->name = std::move(op);
  expr->children.push_back(std::move(left));
  expr->children.push_back(std::move(right));
  return expr;
}

}  // namespace

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  Chain chain(*this);
  while (at_name("or")) {
    chain.link();
    const int line = next().line;
    left = binary(ExprKind::kOr, "or", std::move(left), parse_and(), line);
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  Chain chain(*this);
  while (at_name("and")) {
    chain.link();
    const int line = next().line;
    left = binary(ExprKind::kAnd, "and", std::move(left), parse_not(), line);
  }
  return left;
}

ExprPtr Parser::parse_not() {
  if (!at_name("not")) return parse_compare();
  Nested nested(*this);
  ExprPtr expr = node(ExprKind::kUnary, next().line);
  expr->name = "not";
  expr->children.push_back(parse_not());
  return expr;
}

ExprPtr Parser::parse_compare() {
  const int line = current().line;
  ExprPtr first = parse_math1();
  ExprPtr compare;
  for (;;) {
    std::string op;
    if (current().kind == TokenKind::kOperator &&
        (current().text == "==" || current().text == "!=" || current().text == "<" || current().text == "<=" ||
         current().text == ">" || current().text == ">=")) {
      op = next().text;
    } else if (skip_name("in")) {
      op = "in";
    } else if (at_name("not") && peek().kind == TokenKind::kName && peek().text == "in") {
      next();
      next();
      op = "not in";
    } else {
      break;
    }
    if (!compare) {
      compare = node(ExprKind::kCompare, line);
      compare->children.push_back(std::move(first));
    }
    compare->ops.push_back(op);
    compare->children.push_back(parse_math1());
  }
  return compare ? std::move(compare) : std::move(first);
}

ExprPtr Parser::parse_left_chain(ExprPtr (Parser::*operand)(), std::initializer_list<std::string_view> ops) {
  ExprPtr left = (this->*operand)();
  Chain chain(*this);
  for (;;) {
    const auto op = std::find_if(ops.begin(), ops.end(), [&](std::string_view o) { return at_operator(o); });
    if (op == ops.end()) return left;
    chain.link();
    const int line = next().line;
    left = binary(ExprKind::kBinary, std::string(*op), std::move(left), (this->*operand)(), line);
  }
}

ExprPtr Parser::parse_math1() { return parse_left_chain(&Parser::parse_concat, {"+", "-"}); }
ExprPtr Parser::parse_concat() { return parse_left_chain(&Parser::parse_math2, {"~"}); }
ExprPtr Parser::parse_math2() { return parse_left_chain(&Parser::parse_pow, {"//", "/", "*", "%"}); }
ExprPtr Parser::parse_pow() { return parse_left_chain(&Parser::parse_unary_operand, {"**"}); }

ExprPtr Parser::parse_unary(bool with_filter) {
  ExprPtr expr;
  if (at_operator("-") || at_operator("+")) {
    Nested nested(*this);
    const Token& op = next();
    expr = node(ExprKind::kUnary, op.line);
    expr->name = op.text;
    expr->children.push_back(parse_unary(false));
  } else {
    expr = parse_primary();
  }
  expr = parse_postfix(std::move(expr));
  return with_filter ? parse_filter_expression(std::move(expr)) : std::move(expr);
}

ExprPtr Parser::parse_literal_token() {
  const Token& token = next();
  ExprPtr expr = node(ExprKind::kLiteral, token.line);
  if (token.kind == TokenKind::kInteger) {
    expr->literal = Value(token.integer);
  } else if (token.kind == TokenKind::kFloat) {
    expr->literal = Value(token.number);
  } else {
    std::string text = token.text;
    while (current().kind == TokenKind::kString) text += next().text;  // "a" "b" is "ab"
    expr->literal = Value(std::move(text));
  }
  return expr;
}

ExprPtr Parser::parse_primary() {
  const Token& token = current();
  if (token.kind == TokenKind::kString || token.kind == TokenKind::kInteger || token.kind == TokenKind::kFloat)
    return parse_literal_token();
  if (token.kind == TokenKind::kName) {
    next();
    ExprPtr expr = node(ExprKind::kLiteral, token.line);
    if (token.text == "true" || token.text == "True") {
      expr->literal = Value(true);
    } else if (token.text == "false" || token.text == "False") {
      expr->literal = Value(false);
    } else if (token.text == "none" || token.text == "None") {
      expr->literal = Value(None{});
    } else {
      expr->kind = ExprKind::kName;
      expr->name = token.text;
    }
    return expr;
  }
  if (at_operator("(")) return parse_parenthesized(next().line);
  if (at_operator("[")) return parse_list_literal(next().line);
  if (at_operator("{")) return parse_dict_literal(next().line);
  fail_here(fmt::format("unexpected {} in an expression", describe(token)));
}

ExprPtr Parser::parse_parenthesized(int line) {
  if (skip_operator(")")) return node(ExprKind::kTuple, line);
  ExprPtr inner = parse_expression();
  if (skip_operator(")")) return inner;
  ExprPtr tuple = node(ExprKind::kTuple, line);
  tuple->children.push_back(std::move(inner));
  while (skip_operator(",")) {
    if (at_operator(")")) break;
    tuple->children.push_back(parse_expression());
  }
  expect_operator(")");
  return tuple;
}

ExprPtr Parser::parse_list_literal(int line) {
  ExprPtr list = node(ExprKind::kList, line);
  while (!at_operator("]")) {
    if (!list->children.empty()) expect_operator(",");
    if (at_operator("]")) break;
    list->children.push_back(parse_expression());
  }
  expect_operator("]");
  return list;
}

ExprPtr Parser::parse_dict_literal(int line) {
  ExprPtr dict = node(ExprKind::kDict, line);
  while (!at_operator("}")) {
    if (!dict->children.empty()) expect_operator(",");
    if (at_operator("}")) break;
    dict->children.push_back(parse_expression());
    expect_operator(":");
    dict->children.push_back(parse_expression());
  }
  expect_operator("}");
  return dict;
}

}  // namespace pagedgen::jinja
