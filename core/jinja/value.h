// The values a template computes with, as jinja2 sees Python's: undefined, none, bool, int,
// float, str, list, dict (insertion order kept), callables (macros, methods, globals), a
// namespace() (the one mutable object: `set ns.x` writes it) and a for loop's `loop`.
// Lists and dicts are immutable once built (transformers renders in an immutable sandbox),
// so values share them freely.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace pagedgen::jinja {

class Interpreter;
struct Value;
struct Dict;
struct Callable;
struct Namespace;
struct LoopState;

using List = std::vector<Value>;

// jinja2's default Undefined: prints as '', iterates as nothing, is false; using it any other
// way fails with `hint` ("'x' is undefined", "'dict object' has no attribute 'y'").
struct Undefined {
  std::string hint;
};

struct None {};

struct Value {
  // A namespace is held by the render that made it (Interpreter::make_namespace), not by
  // its values: a namespace may hold itself, and a cycle of owners would never be freed.
  using Storage = std::variant<Undefined, None, bool, std::int64_t, double, std::string, std::shared_ptr<const List>,
                               std::shared_ptr<const Dict>, std::shared_ptr<const Callable>, Namespace*,
                               std::shared_ptr<const LoopState>>;
  Storage data;
  bool tuple = false;   // a list that prints as a Python tuple: (1, 2)
  bool markup = false;  // a str marked safe (the safe and escape filters): what + adds to it is escaped
  int depth = 0;        // lists and dicts nested inside, at most kMaxValueDepth

  Value() : data(Undefined{}) {}
  Value(None) : data(None{}) {}
  Value(bool b) : data(b) {}
  Value(std::int64_t i) : data(i) {}
  Value(int i) : data(std::int64_t{i}) {}
  Value(double d) : data(d) {}
  Value(std::string s) : data(std::move(s)) {}
  Value(std::string_view s) : data(std::string(s)) {}
  Value(const char* s) : data(std::string(s)) {}
  Value(List list);
  Value(Dict dict);
  Value(std::shared_ptr<const Callable> callable) : data(std::move(callable)) {}
  Value(Namespace* ns) : data(ns) {}
  Value(std::shared_ptr<const LoopState> loop) : data(std::move(loop)) {}
  static Value undefined(std::string hint) { return Value(Storage(Undefined{std::move(hint)})); }
  static Value make_tuple(List items) {
    Value value(std::move(items));
    value.tuple = true;
    return value;
  }

  bool is_undefined() const { return std::holds_alternative<Undefined>(data); }
  bool is_none() const { return std::holds_alternative<None>(data); }
  bool is_bool() const { return std::holds_alternative<bool>(data); }
  bool is_int() const { return std::holds_alternative<std::int64_t>(data); }  // bool is not
  bool is_float() const { return std::holds_alternative<double>(data); }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is an int
  bool is_string() const { return std::holds_alternative<std::string>(data); }
  bool is_list() const { return std::holds_alternative<std::shared_ptr<const List>>(data); }
  bool is_dict() const { return std::holds_alternative<std::shared_ptr<const Dict>>(data); }
  bool is_callable() const { return std::holds_alternative<std::shared_ptr<const Callable>>(data); }
  bool is_namespace() const { return std::holds_alternative<Namespace*>(data); }
  bool is_loop() const { return std::holds_alternative<std::shared_ptr<const LoopState>>(data); }

  bool as_bool() const { return std::get<bool>(data); }
  std::int64_t as_int() const { return std::get<std::int64_t>(data); }
  double as_float() const { return std::get<double>(data); }
  const std::string& as_string() const { return std::get<std::string>(data); }
  const List& as_list() const { return *std::get<std::shared_ptr<const List>>(data); }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(data); }
  const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(data); }
  Namespace& as_namespace() const { return *std::get<Namespace*>(data); }
  const LoopState& as_loop() const { return *std::get<std::shared_ptr<const LoopState>>(data); }
  const std::string& undefined_hint() const { return std::get<Undefined>(data).hint; }

 private:
  explicit Value(Storage storage) : data(std::move(storage)) {}
};

// A dict in insertion order (Python's). Keys compare as Python's do (1 == 1.0 == True).
struct Dict {
  std::vector<std::pair<Value, Value>> entries;

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  // Replaces the value of an existing key in place, or appends.
  void set(Value key, Value value);
};

// Arguments of a call: `f(a, b, key=c)`.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

struct Callable {
  std::string name;  // for messages: "macro 'render'", "str.strip", "range"
  std::function<Value(Interpreter&, CallArgs&)> call;
};

struct Namespace {
  Dict attributes;
};

// A for loop's `loop` for one iteration.
struct LoopState {
  std::int64_t index0 = 0;
  std::int64_t length = 0;
  Value previtem;  // undefined on the first iteration
  Value nextitem;  // undefined on the last
};

// A render that fails where no line is at hand (a filter, a method, an operator): the
// interpreter turns it into a TemplateError naming the line it was running.
class Failure : public std::runtime_error {
 public:
  explicit Failure(const std::string& message) : std::runtime_error(message) {}
};

template <typename... Args>
[[noreturn]] void fail_render(fmt::format_string<Args...> format, Args&&... args) {
  throw Failure(fmt::format(format, std::forward<Args>(args)...));
}

// Lists and dicts nest at most this deep: a template could nest them without bound, but
// walking them (printing, tojson, comparing, freeing) recurses. Building a deeper one, or
// walking deeper (through namespaces, which may hold themselves), fails.
inline constexpr int kMaxValueDepth = 500;
void check_value_depth(int depth);

// Python's truthiness (jinja2 Undefined is false).
bool truthy(const Value& value);
// Python's ==, with jinja2's Undefined equal to Undefined.
bool equals(const Value& a, const Value& b);
// Python's type name, as jinja2 messages say it: "str", "dict", "list", "int", "NoneType".
std::string_view type_name(const Value& value);
// A numeric value (int, float or bool) as a double.
double number_as_double(const Value& value);
// An int or bool as an int64.
std::int64_t integer_of(const Value& value);
// Python's <, for sort and the comparison operators; fails on types Python cannot order.
bool less(const Value& a, const Value& b);

}  // namespace pagedgen::jinja
