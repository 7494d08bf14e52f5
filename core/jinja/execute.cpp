// Statements run: text and output written, if/for/set/with, macros defined, call and
// filter blocks. A for loop, a macro call and a with block get their own scope; if does
// not (jinja2's scoping: a set inside a loop does not leak out, hence namespace()).
#include <fmt/format.h>

#include "jinja/interpreter.h"
#include "jinja/value_text.h"

namespace pagedgen::jinja {

Interpreter::Flow Interpreter::execute(const Body& body, std::string& out) {
  Frame frame(*this);
  for (const auto& stmt : body) {
    const Flow flow = execute_one(*stmt, out);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

std::shared_ptr<Scope> Interpreter::child_scope() const {
  auto scope = std::make_shared<Scope>();
  scope->parent = scope_;
  return scope;
}

namespace {

// A macro as a value: calls run its body under the scope it was defined in, while that
// scope lives (a macro kept past its scope sees the template's top level).
Value macro_value(const MacroStmt& macro, const std::shared_ptr<Scope>& defined_in, const std::shared_ptr<Scope>& top) {
  std::weak_ptr<Scope> weak_scope = defined_in;
  std::weak_ptr<Scope> weak_top = top;
  auto callable = std::make_shared<Callable>();
  callable->name = "macro '" + macro.name + "'";
  callable->call = [&macro, weak_scope, weak_top](Interpreter& interpreter, CallArgs& args) {
    std::shared_ptr<Scope> scope = weak_scope.lock();
    if (!scope) scope = weak_top.lock();
    return interpreter.call_macro(macro, scope, args);
  };
  return Value(std::shared_ptr<const Callable>(std::move(callable)));
}

}  // namespace

Interpreter::Flow Interpreter::execute_one(const Stmt& stmt, std::string& out) {
  count_steps();
  line_ = stmt.line;
  if (const auto* text = std::get_if<TextStmt>(&stmt.node)) {
    write(out, text->text);
  } else if (const auto* output = std::get_if<OutputStmt>(&stmt.node)) {
    const Value value = evaluate(*output->expr);
    if (value.is_string())
      write(out, value.as_string());
    else
      write(out, to_text(value));
  } else if (const auto* if_stmt = std::get_if<IfStmt>(&stmt.node)) {
    return execute_if(*if_stmt, out);
  } else if (const auto* for_stmt = std::get_if<ForStmt>(&stmt.node)) {
    return execute_for(*for_stmt, out);
  } else if (const auto* set = std::get_if<SetStmt>(&stmt.node)) {
    execute_set(*set);
  } else if (const auto* macro = std::get_if<MacroStmt>(&stmt.node)) {
    assign(macro->name, macro_value(*macro, scope_, top_));
  } else if (const auto* call_block = std::get_if<CallBlockStmt>(&stmt.node)) {
    execute_call_block(*call_block, out);
  } else if (const auto* filter_block = std::get_if<FilterBlockStmt>(&stmt.node)) {
    std::string body;
    ScopeGuard guard(*this, child_scope());
    execute(filter_block->body, body);
    const Value input(std::move(body));
    write(out, to_text(evaluate_filter(*filter_block->filter, &input)));
  } else if (const auto* with = std::get_if<WithStmt>(&stmt.node)) {
    std::shared_ptr<Scope> scope = child_scope();
    for (const auto& [name, expr] : with->assignments) scope->set(name, evaluate(*expr));
    ScopeGuard guard(*this, std::move(scope));
    return execute(with->body, out);
  } else {
    return std::get<LoopControlStmt>(stmt.node).is_break ? Flow::kBreak : Flow::kContinue;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::execute_if(const IfStmt& node, std::string& out) {
  for (const auto& [condition, body] : node.branches)
    if (truthy(evaluate(*condition))) return execute(body, out);
  return execute(node.else_body, out);
}

namespace {

void assign_targets(Interpreter& interpreter, const std::vector<std::string>& targets, const Value& value) {
  if (targets.size() == 1) return interpreter.assign(targets[0], value);
  const List items = iterate(value);
  if (items.size() != targets.size())
    fail_render("cannot unpack {} values into {} names", items.size(), targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) interpreter.assign(targets[i], items[i]);
}

}  // namespace

Interpreter::Flow Interpreter::execute_for(const ForStmt& node, std::string& out) {
  const Value iterable = evaluate(*node.iterable);
  line_ = node.iterable->line;
  List items = iterate(iterable);
  if (node.condition) {  // filtered first: loop.index and loop.length count what passes
    List kept;
    for (Value& item : items) {
      count_steps();
      ScopeGuard guard(*this, child_scope());
      assign_targets(*this, node.targets, item);
      if (truthy(evaluate(*node.condition))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return execute(node.else_body, out);
  run_loop(node, items, out);
  return Flow::kNormal;
}

// Each iteration runs in a fresh scope: what the body sets is gone by the next one.
void Interpreter::run_loop(const ForStmt& node, const List& items, std::string& out) {
  const auto length = static_cast<std::int64_t>(items.size());
  for (std::int64_t i = 0; i < length; ++i) {
    count_steps();
    auto loop = std::make_shared<LoopState>();
    loop->index0 = i;
    loop->length = length;
    if (i > 0) loop->previtem = items[static_cast<std::size_t>(i - 1)];
    if (i + 1 < length) loop->nextitem = items[static_cast<std::size_t>(i + 1)];
    ScopeGuard guard(*this, child_scope());
    assign_targets(*this, node.targets, items[static_cast<std::size_t>(i)]);
    assign("loop", Value(std::shared_ptr<const LoopState>(std::move(loop))));
    if (execute(node.body, out) == Flow::kBreak) break;
  }
}

void Interpreter::execute_set(const SetStmt& node) {
  Value value;
  if (node.value) {
    value = evaluate(*node.value);
  } else {
    std::string body;
    {
      ScopeGuard guard(*this, child_scope());
      execute(node.body, body);
    }
    value = Value(std::move(body));
    if (node.filter) value = evaluate_filter(*node.filter, &value);
  }
  line_ = node.value ? node.value->line : line_;
  if (node.attribute.empty()) return assign_targets(*this, node.targets, value);
  const Value target = lookup(node.targets[0]);
  if (!target.is_namespace()) fail_render("cannot assign attribute on non-namespace object '{}'", node.targets[0]);
  target.as_namespace().attributes.set(Value(node.attribute), std::move(value));
}

}  // namespace pagedgen::jinja
