// What follows a primary expression: `.attribute`, `[item]`, `[a:b:c]`, calls, filters and
// tests.
#include <fmt/format.h>

#include "jinja/parser.h"
#include "jinja/template.h"

namespace pagedgen::jinja {

ExprPtr Parser::parse_postfix(ExprPtr expr) {
  Chain chain(*this);
  for (;; chain.link()) {
    if (at_operator(".") || at_operator("[")) {
      expr = parse_subscript(std::move(expr));
    } else if (at_operator("(")) {
      expr = parse_call(std::move(expr));
    } else {
      return expr;
    }
  }
}

ExprPtr Parser::parse_call(ExprPtr callee) {
  ExprPtr call = node(ExprKind::kCall, next().line);
  call->children.push_back(std::move(callee));
  parse_call_arguments(*call);
  return call;
}

ExprPtr Parser::parse_filter_expression(ExprPtr expr) {
  Chain chain(*this);
  for (;; chain.link()) {
    if (at_operator("|")) {
      expr = parse_filter(std::move(expr));
    } else if (at_name("is")) {
      expr = parse_test(std::move(expr));
    } else if (at_operator("(")) {
      expr = parse_call(std::move(expr));
    } else {
      return expr;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr target) {
  const Token& token = next();
  if (token.text == ".") {
    if (current().kind == TokenKind::kInteger) {  // `x.0` is x[0]
      ExprPtr item = node(ExprKind::kItem, token.line);
      item->children.push_back(std::move(target));
      item->children.push_back(parse_literal_token());
      return item;
    }
    ExprPtr attribute = node(ExprKind::kAttribute, token.line);
    attribute->name = expect_name();
    attribute->children.push_back(std::move(target));
    return attribute;
  }
  // `[`: an item or a slice.
  ExprPtr bounds[3];
  int colons = 0;
  while (!at_operator("]")) {
    if (skip_operator(":")) {
      if (++colons > 2) fail_here("a slice takes at most two ':'");
      continue;
    }
    if (bounds[colons]) fail_here(fmt::format("expected ']' or ':' in a subscript"));
    bounds[colons] = parse_tuple();
  }
  next();
  ExprPtr expr = node(colons > 0 ? ExprKind::kSlice : ExprKind::kItem, token.line);
  expr->children.push_back(std::move(target));
  if (colons == 0) {
    if (!bounds[0]) fail_here("expected an index in '[]'");
    expr->children.push_back(std::move(bounds[0]));
  } else {
    for (ExprPtr& bound : bounds) expr->children.push_back(std::move(bound));
  }
  return expr;
}

void Parser::parse_call_arguments(Expr& call) {
  for (bool first = true; !skip_operator(")"); first = false) {
    if (!first) {
      expect_operator(",");
      if (skip_operator(")")) return;
    }
    if (current().kind == TokenKind::kName && peek().kind == TokenKind::kOperator && peek().text == "=") {
      std::string name = next().text;
      next();
      call.keywords.emplace_back(std::move(name), parse_expression());
    } else {
      if (!call.keywords.empty()) fail_here("a positional argument after keyword arguments");
      call.children.push_back(parse_expression());
    }
  }
}

ExprPtr Parser::parse_filter(ExprPtr input) {
  Chain chain(*this);
  do {
    chain.link();
    const int line = next().line;  // '|'
    ExprPtr filter = node(ExprKind::kFilter, line);
    filter->name = expect_name();
    while (skip_operator(".")) filter->name += "." + expect_name();
    filter->filter = find_filter(filter->name);
    filter->children.push_back(std::move(input));
    if (skip_operator("(")) parse_call_arguments(*filter);
    input = std::move(filter);
  } while (at_operator("|"));
  return input;
}

ExprPtr Parser::parse_filters(ExprPtr input) {
  return at_operator("|") ? parse_filter(std::move(input)) : std::move(input);
}

ExprPtr Parser::parse_test(ExprPtr subject) {
  const int line = next().line;  // 'is'
  ExprPtr test = node(ExprKind::kTest, line);
  test->negated = skip_name("not");
  test->name = expect_name();
  while (skip_operator(".")) test->name += "." + expect_name();
  test->test = find_test(test->name);
  test->children.push_back(std::move(subject));
  if (skip_operator("(")) {
    parse_call_arguments(*test);
  } else {
    const Token& token = current();
    const bool argument_follows =
        token.kind == TokenKind::kString || token.kind == TokenKind::kInteger || token.kind == TokenKind::kFloat ||
        (token.kind == TokenKind::kName && token.text != "else" && token.text != "or" && token.text != "and") ||
        at_operator("(") || at_operator("[") || at_operator("{");
    if (argument_follows) test->children.push_back(parse_postfix(parse_primary()));
  }
  return test;
}

}  // namespace pagedgen::jinja
