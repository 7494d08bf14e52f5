// Statements: text, {{ output }}, and the block tags chat templates use (if, for, set,
// macro, call, filter, with, break, continue).
#include <fmt/format.h>

#include "jinja/parser.h"
#include "jinja/template.h"

namespace pagedgen::jinja {

Body parse_template(std::vector<Token> tokens) {
  Body body = Parser(std::move(tokens)).parse_all();
  check_known_names(body);
  return body;
}

namespace {

template <typename Node>
std::unique_ptr<Stmt> statement(int line, Node node) {
  return std::make_unique<Stmt>(Stmt{line, std::move(node)});
}

bool is_end_tag(std::string_view name) { return name.starts_with("end") || name == "else" || name == "elif"; }

}  // namespace

Body Parser::parse_all() {
  Body body = parse_body({});
  if (current().kind != TokenKind::kEnd) fail_here(fmt::format("unexpected {{% {} %}}", current().text));
  return body;
}

// Statements until one of `end_tags` (current() is then that tag's name) or the end of
// the template (current() is kEnd); an end tag not in `end_tags` is an error.
Body Parser::parse_body(std::initializer_list<std::string_view> end_tags) {
  Nested nested(*this);
  Body body;
  for (;;) {
    const Token& token = current();
    if (token.kind == TokenKind::kEnd) return body;
    if (token.kind == TokenKind::kText) {
      body.push_back(statement(token.line, TextStmt{next().text}));
    } else if (token.kind == TokenKind::kVariableBegin) {
      next();
      body.push_back(statement(token.line, OutputStmt{parse_tuple()}));
      if (current().kind != TokenKind::kVariableEnd) fail_here("expected '}}' after the expression");
      next();
    } else {
      next();  // {%
      if (current().kind != TokenKind::kName) fail_here("expected a tag name after '{%'");
      for (std::string_view tag : end_tags)
        if (current().text == tag) return body;
      if (is_end_tag(current().text)) fail_here(fmt::format("unexpected {{% {} %}}", current().text));
      body.push_back(parse_block_tag());
    }
  }
}

void Parser::close_tag() {
  if (current().kind != TokenKind::kBlockEnd)
    fail_here(
        fmt::format("expected '%}}', found '{}'", current().kind == TokenKind::kEnd ? "the end" : current().text));
  next();
}

std::string_view Parser::expect_end_tag(std::string_view tag, int opened_line) {
  if (current().kind == TokenKind::kEnd)
    fail_here(fmt::format("unclosed {{% {} %}} (opened on line {})", tag, opened_line));
  const std::string_view name = next().text;
  return name;
}

Body Parser::parse_tag_body(std::string_view tag, int line) {
  close_tag();
  const std::string end_tag = "end" + std::string(tag);
  Body body = parse_body({end_tag});
  expect_end_tag(tag, line);
  close_tag();
  return body;
}

std::unique_ptr<Stmt> Parser::parse_block_tag() {
  const Token& token = next();
  const std::string& tag = token.text;
  const int line = token.line;
  if (tag == "if") return parse_if(line);
  if (tag == "for") return parse_for(line);
  if (tag == "set") return parse_set(line);
  if (tag == "macro") return parse_macro(line);
  if (tag == "call") return parse_call_block(line);
  if (tag == "filter") return parse_filter_block(line);
  if (tag == "with") return parse_with(line);
  if (tag == "break" || tag == "continue") {
    close_tag();
    return statement(line, LoopControlStmt{tag == "break"});
  }
  throw TemplateError(line, fmt::format("unknown tag '{}'", tag));
}

std::unique_ptr<Stmt> Parser::parse_if(int line) {
  IfStmt node;
  for (;;) {
    ExprPtr condition = parse_tuple();
    close_tag();
    Body body = parse_body({"elif", "else", "endif"});
    node.branches.emplace_back(std::move(condition), std::move(body));
    const std::string_view tag = expect_end_tag("if", line);
    if (tag == "elif") continue;
    close_tag();
    if (tag == "else") {
      node.else_body = parse_body({"endif"});
      expect_end_tag("if", line);
      close_tag();
    }
    break;
  }
  return statement(line, std::move(node));
}

std::vector<std::string> Parser::parse_targets() {
  const bool parenthesized = skip_operator("(");
  std::vector<std::string> targets{expect_name()};
  while (skip_operator(",")) {
    if (at_operator(")") || at_name("in") || at_operator("=")) break;
    targets.push_back(expect_name());
  }
  if (parenthesized) expect_operator(")");
  return targets;
}

std::unique_ptr<Stmt> Parser::parse_for(int line) {
  ForStmt node;
  node.targets = parse_targets();
  if (!skip_name("in")) fail_here("expected 'in' in a for tag");
  node.iterable = parse_tuple(false);
  if (skip_name("if")) node.condition = parse_expression();
  if (at_name("recursive")) fail_here("recursive for loops are not supported");
  close_tag();
  node.body = parse_body({"else", "endfor"});
  if (expect_end_tag("for", line) == "else") {
    close_tag();
    node.else_body = parse_body({"endfor"});
    expect_end_tag("for", line);
  }
  close_tag();
  return statement(line, std::move(node));
}

std::unique_ptr<Stmt> Parser::parse_set(int line) {
  SetStmt node;
  node.targets = parse_targets();
  if (node.targets.size() == 1 && skip_operator(".")) node.attribute = expect_name();
  if (skip_operator("=")) {
    node.value = parse_tuple();
    close_tag();
    return statement(line, std::move(node));
  }
  if (node.targets.size() > 1 || !node.attribute.empty()) fail_here("a block set takes one plain name");
  node.filter = parse_filters(nullptr);
  node.body = parse_tag_body("set", line);
  return statement(line, std::move(node));
}

std::vector<Parameter> Parser::parse_parameters() {
  std::vector<Parameter> parameters;
  expect_operator("(");
  for (bool first = true; !skip_operator(")"); first = false) {
    if (!first) expect_operator(",");
    if (skip_operator(")")) break;
    Parameter parameter{expect_name(), nullptr};
    if (skip_operator("=")) parameter.default_value = parse_expression();
    parameters.push_back(std::move(parameter));
  }
  return parameters;
}

std::unique_ptr<Stmt> Parser::parse_macro(int line) {
  MacroStmt node;
  node.name = expect_name();
  node.parameters = parse_parameters();
  node.body = parse_tag_body("macro", line);
  return statement(line, std::move(node));
}

std::unique_ptr<Stmt> Parser::parse_call_block(int line) {
  CallBlockStmt node;
  if (at_operator("(")) node.parameters = parse_parameters();
  node.call = parse_expression();
  if (node.call->kind != ExprKind::kCall) fail_here("expected a call in a call tag");
  node.body = parse_tag_body("call", line);
  return statement(line, std::move(node));
}

std::unique_ptr<Stmt> Parser::parse_filter_block(int line) {
  FilterBlockStmt node;
  --index_;  // parse_filter skips one token (a '|'): the tag's name `filter` stands in for it
  node.filter = parse_filter(nullptr);
  node.body = parse_tag_body("filter", line);
  return statement(line, std::move(node));
}

std::unique_ptr<Stmt> Parser::parse_with(int line) {
  WithStmt node;
  while (current().kind != TokenKind::kBlockEnd) {
    if (!node.assignments.empty()) expect_operator(",");
    std::string name = expect_name();
    expect_operator("=");
    node.assignments.emplace_back(std::move(name), parse_expression());
  }
  node.body = parse_tag_body("with", line);
  return statement(line, std::move(node));
}

}  // namespace pagedgen::jinja
