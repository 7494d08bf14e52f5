// Macro calls and call blocks: arguments bound to parameters (defaults evaluated at the
// call, extra ones in varargs and kwargs), the body rendered to a string in its own scope,
// `caller()` for a call block's body. Nested calls are bounded by max_depth.
#include <fmt/format.h>

#include "jinja/interpreter.h"
#include "jinja/value_text.h"

namespace pagedgen::jinja {

namespace {

// Binds `args` to `parameters` in the current scope of `interpreter`.
void bind_parameters(Interpreter& interpreter, const std::vector<Parameter>& parameters, CallArgs& args) {
  std::size_t next_positional = 0;
  for (const Parameter& parameter : parameters) {
    const Value* given = nullptr;
    if (next_positional < args.positional.size()) {
      given = &args.positional[next_positional++];
    } else {
      for (const auto& [name, value] : args.keywords)
        if (name == parameter.name) given = &value;
    }
    if (given != nullptr) {
      interpreter.assign(parameter.name, *given);
    } else if (parameter.default_value) {
      interpreter.assign(parameter.name, interpreter.evaluate(*parameter.default_value));
    } else {
      interpreter.assign(parameter.name,
                         Value::undefined(fmt::format("parameter '{}' was not provided", parameter.name)));
    }
  }
  List varargs(args.positional.begin() + static_cast<std::ptrdiff_t>(next_positional), args.positional.end());
  Dict kwargs;
  for (const auto& keyword : args.keywords) {
    const auto is_named = [&](const Parameter& p) { return p.name == keyword.first; };
    if (keyword.first == "caller")
      interpreter.assign("caller", keyword.second);
    else if (std::none_of(parameters.begin(), parameters.end(), is_named))
      kwargs.set(Value(keyword.first), keyword.second);
  }
  interpreter.assign("varargs", Value::make_tuple(std::move(varargs)));
  interpreter.assign("kwargs", Value(std::move(kwargs)));
}

}  // namespace

Value Interpreter::call_macro(const MacroStmt& macro, const std::shared_ptr<Scope>& scope, CallArgs& args) {
  if (macro_depth_ >= limits_.max_depth)
    fail_render("depth limit exceeded: macro calls nested deeper than {} (max_depth)", limits_.max_depth);
  ++macro_depth_;
  struct Leave {
    int& depth;
    ~Leave() { --depth; }
  } leave{macro_depth_};
  auto frame_scope = std::make_shared<Scope>();
  frame_scope->parent = scope;
  ScopeGuard guard(*this, std::move(frame_scope));
  bind_parameters(*this, macro.parameters, args);
  std::string out;
  execute(macro.body, out);
  return Value(std::move(out));
}

void Interpreter::execute_call_block(const CallBlockStmt& node, std::string& out) {
  std::weak_ptr<Scope> call_site = scope_;
  auto caller = std::make_shared<Callable>();
  caller->name = "caller";
  caller->call = [&node, call_site](Interpreter& interpreter, CallArgs& args) {
    std::shared_ptr<Scope> scope = call_site.lock();
    if (!scope) scope = interpreter.scope();
    auto frame_scope = std::make_shared<Scope>();
    frame_scope->parent = std::move(scope);
    ScopeGuard guard(interpreter, std::move(frame_scope));
    bind_parameters(interpreter, node.parameters, args);
    std::string text;
    interpreter.execute(node.body, text);
    return Value(std::move(text));
  };
  const Expr& call_expr = *node.call;
  Value function = evaluate(*call_expr.children[0]);
  CallArgs args = evaluate_arguments(call_expr, 1);
  args.keywords.emplace_back("caller", Value(std::shared_ptr<const Callable>(std::move(caller))));
  const Value result = call(function, args);
  write(out, to_text(result));
}

}  // namespace pagedgen::jinja
