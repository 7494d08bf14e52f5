// Python's meaning of truth, equality, order and type names for template values.
#include "jinja/value.h"

#include <algorithm>
#include <cmath>

namespace pagedgen::jinja {

namespace {

// 1 + the deepest of `values`, checked against kMaxValueDepth.
template <typename Values, typename Depth>
int container_depth(const Values& values, Depth depth_of) {
  int deepest = 0;
  for (const auto& item : values) deepest = std::max(deepest, depth_of(item));
  check_value_depth(deepest + 1);
  return deepest + 1;
}

}  // namespace

Value::Value(List list) {
  depth = container_depth(list, [](const Value& v) { return v.depth; });
  data = std::make_shared<const List>(std::move(list));
}

Value::Value(Dict dict) {
  depth = container_depth(dict.entries, [](const auto& e) { return std::max(e.first.depth, e.second.depth); });
  data = std::make_shared<const Dict>(std::move(dict));
}

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : entries)
    if (equals(k, key)) return &v;
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k.is_string() && k.as_string() == key) return &v;
  return nullptr;
}

void Dict::set(Value key, Value value) {
  for (auto& [k, v] : entries) {
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

namespace {

struct TruthVisitor {
  bool operator()(const Undefined&) const { return false; }
  bool operator()(const None&) const { return false; }
  bool operator()(bool b) const { return b; }
  bool operator()(std::int64_t i) const { return i != 0; }
  bool operator()(double d) const { return d != 0.0; }
  bool operator()(const std::string& s) const { return !s.empty(); }
  bool operator()(const std::shared_ptr<const List>& l) const { return !l->empty(); }
  bool operator()(const std::shared_ptr<const Dict>& d) const { return !d->entries.empty(); }
  bool operator()(const auto&) const { return true; }
};

}  // namespace

bool truthy(const Value& value) { return std::visit(TruthVisitor{}, value.data); }

double number_as_double(const Value& value) {
  if (value.is_float()) return value.as_float();
  return static_cast<double>(integer_of(value));
}

std::int64_t integer_of(const Value& value) {
  if (value.is_bool()) return value.as_bool() ? 1 : 0;
  return value.as_int();
}

std::string_view type_name(const Value& value) {
  static constexpr std::string_view kNames[] = {"Undefined", "NoneType", "bool",     "int",       "float",      "str",
                                                "list",      "dict",     "function", "Namespace", "LoopContext"};
  return value.tuple ? "tuple" : kNames[value.data.index()];
}

namespace {

bool equals_at(const Value& a, const Value& b, int depth);
bool less_at(const Value& a, const Value& b, int depth);

bool numbers_equal(const Value& a, const Value& b) {
  if (a.is_float() || b.is_float()) return number_as_double(a) == number_as_double(b);
  return integer_of(a) == integer_of(b);
}

bool lists_equal(const List& a, const List& b, int depth) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!equals_at(a[i], b[i], depth)) return false;
  return true;
}

bool dicts_equal(const Dict& a, const Dict& b, int depth) {
  if (a.entries.size() != b.entries.size()) return false;
  for (const auto& [key, value] : a.entries) {
    const Value* other = b.find(key);
    if (other == nullptr || !equals_at(value, *other, depth)) return false;
  }
  return true;
}

bool equals_at(const Value& a, const Value& b, int depth) {
  check_value_depth(depth);
  if (a.is_number() && b.is_number()) return numbers_equal(a, b);
  if (a.data.index() != b.data.index()) return false;
  if (a.is_undefined() || a.is_none()) return true;
  if (a.is_string()) return a.as_string() == b.as_string();
  if (a.is_list()) return &a.as_list() == &b.as_list() || lists_equal(a.as_list(), b.as_list(), depth + 1);
  if (a.is_dict()) return &a.as_dict() == &b.as_dict() || dicts_equal(a.as_dict(), b.as_dict(), depth + 1);
  if (a.is_callable()) return &a.as_callable() == &b.as_callable();
  if (a.is_namespace()) return &a.as_namespace() == &b.as_namespace();
  return &a.as_loop() == &b.as_loop();
}

bool less_at(const Value& a, const Value& b, int depth) {
  check_value_depth(depth);
  if (a.is_undefined() || b.is_undefined()) throw Failure((a.is_undefined() ? a : b).undefined_hint());
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return number_as_double(a) < number_as_double(b);
    return integer_of(a) < integer_of(b);
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // UTF-8 orders as code points
  if (a.is_list() && b.is_list()) {
    const List& x = a.as_list();
    const List& y = b.as_list();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!equals_at(x[i], y[i], depth + 1)) return less_at(x[i], y[i], depth + 1);
    return x.size() < y.size();
  }
  fail_render("'<' not supported between instances of '{}' and '{}'", type_name(a), type_name(b));
}

}  // namespace

bool equals(const Value& a, const Value& b) { return equals_at(a, b, 0); }

bool less(const Value& a, const Value& b) { return less_at(a, b, 0); }

void check_value_depth(int depth) {
  if (depth > kMaxValueDepth) fail_render("depth limit: a value nested deeper than {} levels", kMaxValueDepth);
}

}  // namespace pagedgen::jinja
