// One render: the scopes of variables, the budgets (steps, output bytes, depth) and the
// line being run, over a parsed template. Expressions are evaluated in evaluate.cpp,
// statements run in execute.cpp, macros called in macro.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/ast.h"
#include "jinja/template.h"
#include "jinja/value.h"

namespace pagedgen::jinja {

// Variables of one level: the globals, the template's top level, a for loop, a macro call.
struct Scope {
  std::vector<std::pair<std::string, Value>> variables;
  std::shared_ptr<Scope> parent;

  const Value* find(std::string_view name) const;
  void set(std::string_view name, Value value);
};

// Evaluation frames (expressions, blocks, calls) nested at most this deep at once, so that
// the C++ stack holds: under 1 MB in a release build, about 5 MB in the sanitizer tree's
// unoptimised one. A plain recursive macro takes under 10 a call: max_depth calls fit.
inline constexpr int kMaxFrames = 1000;

class Interpreter {
 public:
  Interpreter(const RenderLimits& limits, std::chrono::year_month_day today, std::shared_ptr<Scope> top);

  enum class Flow { kNormal, kBreak, kContinue };
  Flow execute(const Body& body, std::string& out);
  Value evaluate(const Expr& expr);
  Value call(const Value& callee, CallArgs& args);
  Value call_macro(const MacroStmt& macro, const std::shared_ptr<Scope>& scope, CallArgs& args);

  // Budgets: each fails with a Failure naming it.
  void count_steps(std::uint64_t steps = 1);
  void check_string_size(std::uint64_t bytes);  // a string built (join, ~, *): bounded, charged 1 step per 64 bytes
  void check_growing_size(std::uint64_t bytes) const;  // a string still growing: bounded only
  void write(std::string& out, std::string_view text);
  std::string spaces(std::int64_t count);  // indent's and tojson's indentation, within the output budget

  int line() const { return line_; }
  std::chrono::year_month_day today() const { return today_; }
  Value lookup(std::string_view name) const;
  void assign(std::string_view name, Value value) { scope_->set(name, std::move(value)); }
  const std::shared_ptr<Scope>& scope() const { return scope_; }

  // A namespace() that lives as long as this render.
  Namespace& make_namespace();

  // A new scope under the current one.
  std::shared_ptr<Scope> child_scope() const;

  // One frame of nested evaluation (kMaxFrames).
  class Frame {
   public:
    explicit Frame(Interpreter& interpreter);
    ~Frame() { --interpreter_.frames_; }
    Frame(const Frame&) = delete;
    Frame& operator=(const Frame&) = delete;

   private:
    Interpreter& interpreter_;
  };

 private:
  friend class ScopeGuard;
  Flow execute_one(const Stmt& stmt, std::string& out);
  Flow execute_if(const IfStmt& node, std::string& out);
  Flow execute_for(const ForStmt& node, std::string& out);
  void execute_set(const SetStmt& node);
  void execute_call_block(const CallBlockStmt& node, std::string& out);
  Value evaluate_compound(const Expr& expr);
  Value evaluate_filter(const Expr& expr, const Value* block_input);
  bool evaluate_test(const Expr& expr);
  Value evaluate_call(const Expr& expr);
  Value evaluate_compare(const Expr& expr);
  CallArgs evaluate_arguments(const Expr& expr, std::size_t first);
  void run_loop(const ForStmt& node, const List& items, std::string& out);

  const RenderLimits& limits_;
  std::chrono::year_month_day today_;
  std::shared_ptr<Scope> scope_;
  std::shared_ptr<Scope> top_;
  std::vector<std::unique_ptr<Namespace>> namespaces_;
  std::uint64_t steps_ = 0;
  std::uint64_t bytes_ = 0;
  int frames_ = 0;
  int macro_depth_ = 0;
  int line_ = 1;
};

// Makes `scope` current until destroyed.
class ScopeGuard {
 public:
  ScopeGuard(Interpreter& interpreter, std::shared_ptr<Scope> scope)
      : interpreter_(interpreter), saved_(std::exchange(interpreter.scope_, std::move(scope))) {}
  ~ScopeGuard() { interpreter_.scope_ = std::move(saved_); }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  Interpreter& interpreter_;
  std::shared_ptr<Scope> saved_;
};

// Attribute and item access as jinja2's sandbox does them (access.cpp): `x.name` tries the
// attribute (a method) then the item, `x[key]` the item then the attribute; a miss is an
// Undefined whose hint says what was missing.
Value get_attribute(const Value& target, const std::string& name);
Value get_item(const Value& target, const Value& key);
Value get_slice(Interpreter& interpreter, const Value& target, const Value& start, const Value& stop,
                const Value& step);
// The items a for loop walks: a list's, a dict's keys, a string's characters.
List iterate(const Value& value);

// A method of a str, dict or list (methods.cpp); null when there is none of that name.
std::shared_ptr<const Callable> find_method(const Value& receiver, const std::string& name);
// list.append, dict.update, ...: the sandbox hands out an Undefined that fails when called.
bool is_mutating_method(const Value& receiver, const std::string& name);

// Binary operators (operators.cpp).
Value binary_operation(Interpreter& interpreter, std::string_view op, const Value& left, const Value& right);
bool contains(const Value& container, const Value& item);

// The globals transformers gives a template: range, namespace, dict, raise_exception,
// strftime_now (globals.cpp).
void add_globals(Scope& scope);

}  // namespace pagedgen::jinja
