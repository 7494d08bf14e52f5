// Unknown filters and tests, refused where jinja2's compiler refuses them. jinja2 compiles an
// if's tests and the statements directly in it, and the parts of a conditional expression,
// in a "soft" frame where an unknown name fails only when run; a for loop, a macro, a call,
// filter or with block, or a block set inside opens a new frame, which is not soft.
#include <fmt/format.h>

#include "jinja/parser.h"
#include "jinja/template.h"

namespace pagedgen::jinja {

namespace {

void check_body(const Body& body, bool soft);

void check_expression(const Expr* expr, bool soft) {
  if (expr == nullptr) return;
  if (!soft && expr->kind == ExprKind::kFilter && expr->filter == nullptr)
    throw TemplateError(expr->line, fmt::format("unknown filter '{}'", expr->name));
  if (!soft && expr->kind == ExprKind::kTest && expr->test == nullptr)
    throw TemplateError(expr->line, fmt::format("unknown test '{}'", expr->name));
  const bool children_soft = soft || expr->kind == ExprKind::kConditional;
  for (const ExprPtr& child : expr->children) check_expression(child.get(), children_soft);
  for (const auto& keyword : expr->keywords) check_expression(keyword.second.get(), children_soft);
}

void check_parameters(const std::vector<Parameter>& parameters) {
  for (const Parameter& parameter : parameters) check_expression(parameter.default_value.get(), false);
}

void check_statement(const Stmt& stmt, bool soft) {
  if (const auto* output = std::get_if<OutputStmt>(&stmt.node)) {
    check_expression(output->expr.get(), soft);
  } else if (const auto* if_stmt = std::get_if<IfStmt>(&stmt.node)) {
    for (const auto& [condition, body] : if_stmt->branches) {
      check_expression(condition.get(), true);
      check_body(body, true);
    }
    check_body(if_stmt->else_body, true);
  } else if (const auto* for_stmt = std::get_if<ForStmt>(&stmt.node)) {
    check_expression(for_stmt->iterable.get(), soft);
    check_expression(for_stmt->condition.get(), false);
    check_body(for_stmt->body, false);
    check_body(for_stmt->else_body, false);
  } else if (const auto* set = std::get_if<SetStmt>(&stmt.node)) {
    check_expression(set->value.get(), soft);
    check_expression(set->filter.get(), soft);
    check_body(set->body, false);
  } else if (const auto* macro = std::get_if<MacroStmt>(&stmt.node)) {
    check_parameters(macro->parameters);
    check_body(macro->body, false);
  } else if (const auto* call = std::get_if<CallBlockStmt>(&stmt.node)) {
    check_expression(call->call.get(), soft);
    check_parameters(call->parameters);
    check_body(call->body, false);
  } else if (const auto* filter = std::get_if<FilterBlockStmt>(&stmt.node)) {
    check_expression(filter->filter.get(), soft);
    check_body(filter->body, false);
  } else if (const auto* with = std::get_if<WithStmt>(&stmt.node)) {
    for (const auto& assignment : with->assignments) check_expression(assignment.second.get(), soft);
    check_body(with->body, false);
  }
}

void check_body(const Body& body, bool soft) {
  for (const auto& stmt : body) check_statement(*stmt, soft);
}

}  // namespace

void check_known_names(const Body& body) { check_body(body, false); }

}  // namespace pagedgen::jinja
