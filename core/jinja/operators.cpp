// The binary operators with Python's meaning: + - * / // % ** on ints (checked for overflow:
// Python's ints are unbounded, ours fail) and floats, + and * on str and list, % as string
// formatting, ~ as str() concatenation, and `in`.
#include <fmt/format.h>

#include <cmath>

#include "jinja/interpreter.h"
#include "jinja/python_format.h"
#include "jinja/value_text.h"

namespace pagedgen::jinja {

namespace {

[[noreturn]] void unsupported(std::string_view op, const Value& left, const Value& right) {
  fail_render("unsupported operand type(s) for {}: '{}' and '{}'", op, type_name(left), type_name(right));
}

// Python's ints are unbounded; ours stop at 64 bits with an error rather than wrap.
void check_overflow(bool overflow, std::string_view op) {
  if (overflow) fail_render("integer overflow in '{}' (beyond 64 bits)", op);
}

Value integer_power(std::int64_t base, std::int64_t exponent) {
  if (exponent < 0) return Value(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  std::int64_t result = 1;
  for (; exponent > 0; exponent >>= 1) {
    if (exponent & 1) check_overflow(__builtin_mul_overflow(result, base, &result), "**");
    if (exponent > 1) check_overflow(__builtin_mul_overflow(base, base, &base), "**");
  }
  return Value(result);
}

Value integer_arithmetic(std::string_view op, std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (op == "+" || op == "-" || op == "*") {
    check_overflow(op == "+"   ? __builtin_add_overflow(a, b, &r)
                   : op == "-" ? __builtin_sub_overflow(a, b, &r)
                               : __builtin_mul_overflow(a, b, &r),
                   op);
    return Value(r);
  }
  if (op == "**") return integer_power(a, b);
  if (b == 0) fail_render("{} by zero", op == "%" ? "integer modulo" : "division");
  if (op == "/") return Value(static_cast<double>(a) / static_cast<double>(b));
  check_overflow(a == INT64_MIN && b == -1, op);
  std::int64_t quotient = a / b;
  std::int64_t remainder = a % b;
  if (remainder != 0 && ((remainder < 0) != (b < 0))) {  // Python floors
    --quotient;
    remainder += b;
  }
  return Value(op == "//" ? quotient : remainder);
}

Value float_arithmetic(std::string_view op, double a, double b) {
  if (op == "+") return Value(a + b);
  if (op == "-") return Value(a - b);
  if (op == "*") return Value(a * b);
  if (op == "**") return Value(std::pow(a, b));
  if (b == 0) fail_render("float {} by zero", op == "%" ? "modulo" : "division");
  if (op == "/") return Value(a / b);
  const double floored = std::floor(a / b);
  if (op == "//") return Value(floored);
  double remainder = std::fmod(a, b);
  if (remainder != 0 && ((remainder < 0) != (b < 0))) remainder += b;
  return Value(remainder);
}

// sequence * count: the size checked before anything is built.
Value repeat(Interpreter& interpreter, const Value& sequence, std::int64_t count) {
  const auto times = static_cast<std::uint64_t>(std::max<std::int64_t>(count, 0));
  const std::size_t unit = sequence.is_string() ? sequence.as_string().size() : sequence.as_list().size();
  const std::uint64_t total = unit == 0 ? 0 : times > UINT64_MAX / unit ? UINT64_MAX : times * unit;
  if (sequence.is_string()) {
    interpreter.check_string_size(total);
    std::string out;
    out.reserve(total);
    for (std::uint64_t i = 0; i < times && unit > 0; ++i) out += sequence.as_string();
    return Value(std::move(out));
  }
  interpreter.count_steps(total);
  List out;
  out.reserve(total);
  for (std::uint64_t i = 0; i < times && unit > 0; ++i)
    out.insert(out.end(), sequence.as_list().begin(), sequence.as_list().end());
  return sequence.tuple ? Value::make_tuple(std::move(out)) : Value(std::move(out));
}

// str + str; with a Markup on either side the other side is escaped and the sum is Markup.
Value concatenate(Interpreter& interpreter, const Value& left, const Value& right) {
  const bool markup = left.markup || right.markup;
  const auto side = [&](const Value& v) { return markup && !v.markup ? markup_escape(v.as_string()) : v.as_string(); };
  Value sum(side(left) + side(right));
  interpreter.check_string_size(sum.as_string().size());
  sum.markup = markup;
  return sum;
}

}  // namespace

Value binary_operation(Interpreter& interpreter, std::string_view op, const Value& left, const Value& right) {
  if (op == "~") {
    std::string out = to_text(left) + to_text(right);
    interpreter.check_string_size(out.size());
    return Value(std::move(out));
  }
  if (op == "%" && left.is_string()) return Value(python_percent_format(interpreter, left.as_string(), right));
  if (left.is_undefined()) throw Failure(left.undefined_hint());
  if (right.is_undefined()) throw Failure(right.undefined_hint());
  if (left.is_number() && right.is_number()) {
    if (left.is_float() || right.is_float())
      return float_arithmetic(op, number_as_double(left), number_as_double(right));
    return integer_arithmetic(op, integer_of(left), integer_of(right));
  }
  if (op == "+" && left.is_string() && right.is_string()) return concatenate(interpreter, left, right);
  if (op == "+" && left.is_list() && right.is_list()) {
    interpreter.count_steps(left.as_list().size() + right.as_list().size());
    List out = left.as_list();
    out.insert(out.end(), right.as_list().begin(), right.as_list().end());
    return Value(std::move(out));
  }
  if (op == "*" && (left.is_string() || left.is_list()) && (right.is_int() || right.is_bool()))
    return repeat(interpreter, left, integer_of(right));
  if (op == "*" && (right.is_string() || right.is_list()) && (left.is_int() || left.is_bool()))
    return repeat(interpreter, right, integer_of(left));
  unsupported(op, left, right);
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) fail_render("'in <string>' requires string as left operand, not {}", type_name(item));
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_dict()) return container.as_dict().find(item) != nullptr;
  if (container.is_list()) {
    for (const Value& element : container.as_list())
      if (equals(element, item)) return true;
    return false;
  }
  if (container.is_undefined()) return false;
  if (container.is_namespace()) return container.as_namespace().attributes.find(item) != nullptr;
  fail_render("argument of type '{}' is not iterable", type_name(container));
}

}  // namespace pagedgen::jinja
