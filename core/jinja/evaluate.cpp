// Expressions evaluated to values: names through the scopes, literals, operators with
// Python's meaning, attribute and item access, calls, filters and tests.
#include <fmt/format.h>

#include "jinja/interpreter.h"
#include "jinja/value_text.h"

namespace pagedgen::jinja {

const Value* Scope::find(std::string_view name) const {
  for (const Scope* scope = this; scope != nullptr; scope = scope->parent.get())
    for (const auto& [key, value] : scope->variables)
      if (key == name) return &value;
  return nullptr;
}

void Scope::set(std::string_view name, Value value) {
  for (auto& [key, old] : variables) {
    if (key == name) {
      old = std::move(value);
      return;
    }
  }
  variables.emplace_back(std::string(name), std::move(value));
}

Interpreter::Interpreter(const RenderLimits& limits, std::chrono::year_month_day today, std::shared_ptr<Scope> top)
    : limits_(limits), today_(today), scope_(top), top_(std::move(top)) {}

Interpreter::Frame::Frame(Interpreter& interpreter) : interpreter_(interpreter) {
  if (++interpreter_.frames_ > kMaxFrames)
    fail_render("depth limit exceeded: blocks, expressions and calls nested deeper than {} levels", kMaxFrames);
}

void Interpreter::count_steps(std::uint64_t steps) {
  const bool over = steps > limits_.max_steps - steps_;  // steps_ never passes max_steps
  steps_ += over ? 0 : steps;
  if (over) fail_render("step budget exceeded: the template ran more than {} steps (max_steps)", limits_.max_steps);
}

void Interpreter::check_growing_size(std::uint64_t bytes) const {
  if (bytes > limits_.max_output_bytes)
    fail_render("output budget exceeded: a string of more than {} bytes (max_output_bytes)", limits_.max_output_bytes);
}

void Interpreter::check_string_size(std::uint64_t bytes) {
  check_growing_size(bytes);
  count_steps(bytes / 64);
}

std::string Interpreter::spaces(std::int64_t count) {
  const auto size = static_cast<std::uint64_t>(std::max<std::int64_t>(count, 0));
  check_string_size(size);
  return std::string(static_cast<std::size_t>(std::min<std::uint64_t>(size, limits_.max_output_bytes)), ' ');
}

void Interpreter::write(std::string& out, std::string_view text) {
  bytes_ += text.size();
  if (bytes_ > limits_.max_output_bytes)
    fail_render("output budget exceeded: the template wrote more than {} bytes (max_output_bytes)",
                limits_.max_output_bytes);
  out += text;
}

Namespace& Interpreter::make_namespace() {
  count_steps();
  namespaces_.push_back(std::make_unique<Namespace>());
  return *namespaces_.back();
}

Value Interpreter::lookup(std::string_view name) const {
  if (const Value* value = scope_->find(name)) return *value;
  return Value::undefined(fmt::format("'{}' is undefined", name));
}

Value Interpreter::evaluate(const Expr& expr) {
  Frame frame(*this);
  count_steps();
  line_ = expr.line;
  switch (expr.kind) {
    case ExprKind::kLiteral:
      return expr.literal;
    case ExprKind::kName:
      return lookup(expr.name);
    case ExprKind::kAnd: {
      Value left = evaluate(*expr.children[0]);
      return truthy(left) ? evaluate(*expr.children[1]) : left;
    }
    case ExprKind::kOr: {
      Value left = evaluate(*expr.children[0]);
      return truthy(left) ? left : evaluate(*expr.children[1]);
    }
    case ExprKind::kConditional:
      if (truthy(evaluate(*expr.children[1]))) return evaluate(*expr.children[0]);
      if (expr.children[2]) return evaluate(*expr.children[2]);
      return Value::undefined("the conditional expression has no else");
    case ExprKind::kTest:
      return Value(evaluate_test(expr));
    case ExprKind::kFilter:
      return evaluate_filter(expr, nullptr);
    case ExprKind::kCall:
      return evaluate_call(expr);
    case ExprKind::kCompare:
      return evaluate_compare(expr);
    default:
      return evaluate_compound(expr);
  }
}

namespace {

Value unary(std::string_view op, const Value& operand) {
  if (op == "not") return Value(!truthy(operand));
  if (operand.is_undefined()) throw Failure(operand.undefined_hint());
  if (operand.is_float()) return Value(op == "-" ? -operand.as_float() : operand.as_float());
  if (!operand.is_number()) fail_render("bad operand type for unary {}: '{}'", op, type_name(operand));
  const std::int64_t value = integer_of(operand);
  if (op == "+") return Value(value);
  if (value == INT64_MIN) fail_render("integer overflow: -({})", value);
  return Value(-value);
}

}  // namespace

Value Interpreter::evaluate_compound(const Expr& expr) {
  switch (expr.kind) {
    case ExprKind::kList:
    case ExprKind::kTuple: {
      List items;
      items.reserve(expr.children.size());
      for (const ExprPtr& child : expr.children) items.push_back(evaluate(*child));
      return expr.kind == ExprKind::kTuple ? Value::make_tuple(std::move(items)) : Value(std::move(items));
    }
    case ExprKind::kDict: {
      Dict dict;
      for (std::size_t i = 0; i + 1 < expr.children.size(); i += 2) {
        Value key = evaluate(*expr.children[i]);
        dict.set(std::move(key), evaluate(*expr.children[i + 1]));
      }
      return Value(std::move(dict));
    }
    case ExprKind::kAttribute: {
      Value target = evaluate(*expr.children[0]);
      line_ = expr.line;
      return get_attribute(target, expr.name);
    }
    case ExprKind::kItem: {
      Value target = evaluate(*expr.children[0]);
      Value key = evaluate(*expr.children[1]);
      line_ = expr.line;
      return get_item(target, key);
    }
    case ExprKind::kSlice: {
      Value bounds[4];
      for (std::size_t i = 0; i < 4; ++i)
        if (expr.children[i]) bounds[i] = evaluate(*expr.children[i]);
      for (std::size_t i = 1; i < 4; ++i)
        if (!expr.children[i]) bounds[i] = Value(None{});
      line_ = expr.line;
      return get_slice(*this, bounds[0], bounds[1], bounds[2], bounds[3]);
    }
    case ExprKind::kUnary: {
      Value operand = evaluate(*expr.children[0]);
      line_ = expr.line;
      return unary(expr.name, operand);
    }
    default: {  // kBinary
      Value left = evaluate(*expr.children[0]);
      Value right = evaluate(*expr.children[1]);
      line_ = expr.line;
      return binary_operation(*this, expr.name, left, right);
    }
  }
}

Value Interpreter::evaluate_compare(const Expr& expr) {
  Value left = evaluate(*expr.children[0]);
  for (std::size_t i = 0; i < expr.ops.size(); ++i) {
    Value right = evaluate(*expr.children[i + 1]);
    line_ = expr.line;
    const std::string& op = expr.ops[i];
    bool result;
    if (op == "==")
      result = equals(left, right);
    else if (op == "!=")
      result = !equals(left, right);
    else if (op == "<")
      result = less(left, right);
    else if (op == ">")
      result = less(right, left);
    else if (op == "<=")
      result = !less(right, left);
    else if (op == ">=")
      result = !less(left, right);
    else if (op == "in")
      result = contains(right, left);
    else
      result = !contains(right, left);
    if (!result) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

CallArgs Interpreter::evaluate_arguments(const Expr& expr, std::size_t first) {
  CallArgs args;
  for (std::size_t i = first; i < expr.children.size(); ++i) args.positional.push_back(evaluate(*expr.children[i]));
  for (const auto& [name, value] : expr.keywords) args.keywords.emplace_back(name, evaluate(*value));
  line_ = expr.line;
  return args;
}

Value Interpreter::evaluate_filter(const Expr& expr, const Value* block_input) {
  // In a filter block the innermost filter of the chain takes the block's text.
  const Expr* inner = expr.children[0].get();
  Value input = inner == nullptr                                             ? *block_input
                : block_input != nullptr && inner->kind == ExprKind::kFilter ? evaluate_filter(*inner, block_input)
                                                                             : evaluate(*inner);
  CallArgs args = evaluate_arguments(expr, 1);
  if (expr.filter == nullptr) fail_render("unknown filter '{}'", expr.name);
  return expr.filter(*this, input, args);
}

bool Interpreter::evaluate_test(const Expr& expr) {
  Value subject = evaluate(*expr.children[0]);
  CallArgs args = evaluate_arguments(expr, 1);
  if (expr.test == nullptr) fail_render("unknown test '{}'", expr.name);
  return expr.test(*this, subject, args) != expr.negated;
}

Value Interpreter::evaluate_call(const Expr& expr) {
  const Expr& callee = *expr.children[0];
  if (callee.kind == ExprKind::kAttribute) {  // a method call: no bound method built
    Value receiver = evaluate(*callee.children[0]);
    if (auto method = find_method(receiver, callee.name)) {
      CallArgs args = evaluate_arguments(expr, 1);
      return method->call(*this, args);
    }
    line_ = callee.line;
    Value function = get_attribute(receiver, callee.name);
    CallArgs args = evaluate_arguments(expr, 1);
    return call(function, args);
  }
  Value function = evaluate(callee);
  CallArgs args = evaluate_arguments(expr, 1);
  return call(function, args);
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  count_steps();
  if (callee.is_undefined()) throw Failure(callee.undefined_hint());
  if (!callee.is_callable()) fail_render("'{}' object is not callable", type_name(callee));
  return callee.as_callable().call(*this, args);
}

}  // namespace pagedgen::jinja
