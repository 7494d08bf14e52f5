// The tests of `x is name`: defined, none, string, mapping, iterable, sequence, number,
// integer, float, boolean, true, false, equalto, sameas, odd, even, divisibleby, in, the
// comparisons, callable, lower, upper; as jinja2's tests judge Python values (a bool is a
// number; an Undefined is iterable and a sequence).
#include "jinja/arguments.h"
#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "jinja/unicode_text.h"

namespace pagedgen::jinja {

namespace {

const Value& other(const CallArgs& args) {
  const Value* value = argument(args, 0, "other");
  if (value == nullptr) fail_render("the test needs a value to compare with");
  return *value;
}

bool defined(Interpreter&, const Value& v, CallArgs&) { return !v.is_undefined(); }
bool undefined(Interpreter&, const Value& v, CallArgs&) { return v.is_undefined(); }
bool none(Interpreter&, const Value& v, CallArgs&) { return v.is_none(); }
bool string(Interpreter&, const Value& v, CallArgs&) { return v.is_string(); }
bool mapping(Interpreter&, const Value& v, CallArgs&) { return v.is_dict(); }
bool iterable(Interpreter&, const Value& v, CallArgs&) {
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict() || v.is_loop();
}
bool sequence(Interpreter&, const Value& v, CallArgs&) {
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
}
bool number(Interpreter&, const Value& v, CallArgs&) { return v.is_number(); }
bool integer(Interpreter&, const Value& v, CallArgs&) { return v.is_int(); }
bool float_test(Interpreter&, const Value& v, CallArgs&) { return v.is_float(); }
bool boolean(Interpreter&, const Value& v, CallArgs&) { return v.is_bool(); }
bool true_test(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); }
bool false_test(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); }
bool callable(Interpreter&, const Value& v, CallArgs&) { return v.is_callable(); }
bool equal(Interpreter&, const Value& v, CallArgs& args) { return equals(v, other(args)); }
bool not_equal(Interpreter&, const Value& v, CallArgs& args) { return !equals(v, other(args)); }
bool less_than(Interpreter&, const Value& v, CallArgs& args) { return less(v, other(args)); }
bool less_equal(Interpreter&, const Value& v, CallArgs& args) { return !less(other(args), v); }
bool greater_than(Interpreter&, const Value& v, CallArgs& args) { return less(other(args), v); }
bool greater_equal(Interpreter&, const Value& v, CallArgs& args) { return !less(v, other(args)); }
bool in(Interpreter&, const Value& v, CallArgs& args) { return contains(other(args), v); }

// `is sameas`: Python's identity; values without identity here compare by kind and value.
bool sameas(Interpreter&, const Value& v, CallArgs& args) {
  const Value& o = other(args);
  if (v.data.index() != o.data.index()) return false;
  if (v.is_list()) return &v.as_list() == &o.as_list();
  if (v.is_dict()) return &v.as_dict() == &o.as_dict();
  return equals(v, o);
}

// odd, even, divisibleby: Python's % (floats too), compared with the remainder wanted.
bool remainder_is(Interpreter& interpreter, const Value& v, const Value& divisor, std::int64_t wanted) {
  return equals(binary_operation(interpreter, "%", v, divisor), Value(wanted));
}

bool odd(Interpreter& i, const Value& v, CallArgs&) {
  if (v.is_string()) fail_render("not all arguments converted during string formatting");
  return remainder_is(i, v, Value(2), 1);
}
bool even(Interpreter& i, const Value& v, CallArgs&) {
  if (v.is_string()) fail_render("not all arguments converted during string formatting");
  return remainder_is(i, v, Value(2), 0);
}
bool divisibleby(Interpreter& i, const Value& v, CallArgs& args) {
  if (v.is_string()) fail_render("not all arguments converted during string formatting");
  return remainder_is(i, v, other(args), 0);
}

bool lower_test(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() && lower(v.as_string()) == v.as_string() && upper(v.as_string()) != v.as_string();
}
bool upper_test(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() && upper(v.as_string()) == v.as_string() && lower(v.as_string()) != v.as_string();
}

constexpr TestEntry kTests[] = {
    {"defined", defined},    {"undefined", undefined},
    {"none", none},          {"string", string},
    {"mapping", mapping},    {"iterable", iterable},
    {"sequence", sequence},  {"number", number},
    {"integer", integer},    {"float", float_test},
    {"boolean", boolean},    {"true", true_test},
    {"false", false_test},   {"callable", callable},
    {"equalto", equal},      {"eq", equal},
    {"==", equal},           {"ne", not_equal},
    {"!=", not_equal},       {"lt", less_than},
    {"lessthan", less_than}, {"<", less_than},
    {"le", less_equal},      {"<=", less_equal},
    {"gt", greater_than},    {"greaterthan", greater_than},
    {">", greater_than},     {"ge", greater_equal},
    {">=", greater_equal},   {"in", in},
    {"sameas", sameas},      {"odd", odd},
    {"even", even},          {"divisibleby", divisibleby},
    {"lower", lower_test},   {"upper", upper_test},
};

}  // namespace

TestFunction find_test(std::string_view name) {
  for (const auto& [key, function] : kTests)
    if (key == name) return function;
  return nullptr;
}

}  // namespace pagedgen::jinja
