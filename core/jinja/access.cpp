// `x.name`, `x[key]`, `x[a:b:c]` and iteration, as jinja2's sandboxed getattr/getitem do
// them over Python objects: a dict's methods before its keys for `.`, its keys first for
// `[]`; negative indices from the end; strings indexed by code point.
#include <fmt/format.h>

#include <optional>

#include "jinja/interpreter.h"
#include "jinja/unicode_text.h"
#include "jinja/value_text.h"

namespace pagedgen::jinja {

namespace {

std::string object_name(const Value& value) {
  if (value.is_none()) return "None";
  return fmt::format("{} object", type_name(value));
}

Value missing_attribute(const Value& target, std::string_view name) {
  return Value::undefined(fmt::format("'{}' has no attribute '{}'", object_name(target), name));
}

Value loop_attribute(const LoopState& loop, const std::string& name) {
  const std::int64_t index0 = loop.index0;
  if (name == "index") return Value(index0 + 1);
  if (name == "index0") return Value(index0);
  if (name == "first") return Value(index0 == 0);
  if (name == "last") return Value(index0 + 1 == loop.length);
  if (name == "length") return Value(loop.length);
  if (name == "revindex") return Value(loop.length - index0);
  if (name == "revindex0") return Value(loop.length - index0 - 1);
  if (name == "depth") return Value(1);
  if (name == "depth0") return Value(0);
  if (name == "previtem") return index0 > 0 ? loop.previtem : Value::undefined("there is no previous item");
  if (name == "nextitem") return index0 + 1 < loop.length ? loop.nextitem : Value::undefined("there is no next item");
  if (name == "cycle") {
    auto cycle = std::make_shared<Callable>();
    cycle->name = "loop.cycle";
    cycle->call = [index0](Interpreter&, CallArgs& args) {
      if (args.positional.empty()) fail_render("no items for cycling given");
      return args.positional[static_cast<std::size_t>(index0) % args.positional.size()];
    };
    return Value(std::shared_ptr<const Callable>(std::move(cycle)));
  }
  return Value::undefined(fmt::format("'LoopContext object' has no attribute '{}'", name));
}

// Python's index normalisation: negative from the end; nullopt when out of range.
std::optional<std::size_t> normalize_index(std::int64_t index, std::size_t size) {
  if (index < 0) index += static_cast<std::int64_t>(size);
  if (index < 0 || index >= static_cast<std::int64_t>(size)) return std::nullopt;
  return static_cast<std::size_t>(index);
}

}  // namespace

Value get_attribute(const Value& target, const std::string& name) {
  if (target.is_undefined()) throw Failure(target.undefined_hint());
  if (auto method = find_method(target, name)) return Value(std::move(method));
  if (is_mutating_method(target, name))
    return Value::undefined(fmt::format("access to attribute '{}' of '{}' object is unsafe.", name, type_name(target)));
  if (target.is_dict()) {
    if (const Value* value = target.as_dict().find(std::string_view(name))) return *value;
  } else if (target.is_namespace()) {
    if (const Value* value = target.as_namespace().attributes.find(std::string_view(name))) return *value;
  } else if (target.is_loop()) {
    return loop_attribute(target.as_loop(), name);
  }
  return missing_attribute(target, name);
}

Value get_item(const Value& target, const Value& key) {
  if (target.is_undefined()) throw Failure(target.undefined_hint());
  if (target.is_dict()) {
    if (const Value* value = target.as_dict().find(key)) return *value;
  } else if (target.is_list() && (key.is_int() || key.is_bool())) {
    const List& list = target.as_list();
    if (auto index = normalize_index(integer_of(key), list.size())) return list[*index];
    return Value::undefined(fmt::format("'list object' has no element {}", integer_of(key)));
  } else if (target.is_string() && (key.is_int() || key.is_bool())) {
    const std::string& text = target.as_string();
    const std::vector<std::size_t> offsets = code_point_offsets(text);
    if (auto index = normalize_index(integer_of(key), offsets.size() - 1))
      return Value(text.substr(offsets[*index], offsets[*index + 1] - offsets[*index]));
    return Value::undefined(fmt::format("'str object' has no element {}", integer_of(key)));
  }
  if (key.is_string()) return get_attribute(target, key.as_string());
  return Value::undefined(fmt::format("'{}' has no element {}", object_name(target), repr(key)));
}

namespace {

// Python's slice.indices: the positions a[start:stop:step] takes from a sequence of `size`.
std::vector<std::size_t> slice_positions(Interpreter& interpreter, std::int64_t size, const Value& start_value,
                                         const Value& stop_value, const Value& step_value) {
  const auto bound = [](const Value& v, const char* what) -> std::optional<std::int64_t> {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) fail_render("slice {} must be an integer or None, not '{}'", what, type_name(v));
    return integer_of(v);
  };
  const std::int64_t step = bound(step_value, "step").value_or(1);
  if (step == 0) fail_render("slice step cannot be zero");
  const auto clamp = [&](std::optional<std::int64_t> v, std::int64_t fallback) {
    if (!v) return fallback;
    std::int64_t x = *v < 0 ? std::max<std::int64_t>(*v, -size - 1) + size : *v;
    return step > 0 ? std::clamp<std::int64_t>(x, 0, size) : std::clamp<std::int64_t>(x, -1, size - 1);
  };
  const std::int64_t start = clamp(bound(start_value, "indices"), step > 0 ? 0 : size - 1);
  const std::int64_t stop = clamp(bound(stop_value, "indices"), step > 0 ? size : -1);
  std::vector<std::size_t> positions;
  for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    interpreter.count_steps();
    positions.push_back(static_cast<std::size_t>(i));
  }
  return positions;
}

}  // namespace

Value get_slice(Interpreter& interpreter, const Value& target, const Value& start, const Value& stop,
                const Value& step) {
  if (target.is_undefined()) throw Failure(target.undefined_hint());
  if (target.is_list()) {
    const List& list = target.as_list();
    List out;
    for (std::size_t i : slice_positions(interpreter, static_cast<std::int64_t>(list.size()), start, stop, step))
      out.push_back(list[i]);
    return Value(std::move(out));
  }
  if (target.is_string()) {
    const std::string& text = target.as_string();
    const std::vector<std::size_t> offsets = code_point_offsets(text);
    std::string out;
    for (std::size_t i : slice_positions(interpreter, static_cast<std::int64_t>(offsets.size() - 1), start, stop, step))
      out.append(text, offsets[i], offsets[i + 1] - offsets[i]);
    return Value(std::move(out));
  }
  fail_render("'{}' object is not subscriptable", type_name(target));
}

List iterate(const Value& value) {
  if (value.is_list()) return value.as_list();
  if (value.is_undefined()) return {};
  if (value.is_dict()) {
    List keys;
    for (const auto& entry : value.as_dict().entries) keys.push_back(entry.first);
    return keys;
  }
  if (value.is_namespace()) fail_render("'Namespace' object is not iterable");
  if (value.is_string()) {
    const std::string& text = value.as_string();
    List characters;
    for (std::size_t pos = 0; pos < text.size();) {
      const std::size_t length = decode_at(text, pos).length;
      characters.emplace_back(text.substr(pos, length));
      pos += length;
    }
    return characters;
  }
  fail_render("'{}' object is not iterable", type_name(value));
}

}  // namespace pagedgen::jinja
