// json.dumps over template values.
#include "jinja/json_output.h"

#include <fmt/format.h>

#include <algorithm>

#include "jinja/unicode_text.h"
#include "jinja/value_text.h"

namespace pagedgen::jinja {

namespace {

class JsonWriter {
 public:
  JsonWriter(const JsonStyle& style, const std::function<void(std::size_t)>& check_size)
      : style_(style), check_size_(check_size) {}

  void write(const Value& value, int depth) {
    check_value_depth(depth);
    if (value.is_none())
      out_ += "null";
    else if (value.is_bool())
      out_ += value.as_bool() ? "true" : "false";
    else if (value.is_int())
      out_ += std::to_string(value.as_int());
    else if (value.is_float())
      write_float(value.as_float());
    else if (value.is_string())
      write_string(value.as_string());
    else if (value.is_list())
      write_list(value.as_list(), depth);
    else if (value.is_dict())
      write_dict(value.as_dict(), depth);
    else
      fail_render("Object of type {} is not JSON serializable", type_name(value));
    check_size_(out_.size());
  }

  std::string take() { return std::move(out_); }

 private:
  void write_float(double value) {
    if (std::isnan(value))
      out_ += "NaN";
    else if (std::isinf(value))
      out_ += value < 0 ? "-Infinity" : "Infinity";
    else
      out_ += float_repr(value);
  }

  void write_string(const std::string& text) {
    out_ += '"';
    for (std::size_t pos = 0; pos < text.size();) {
      const CodePoint cp = decode_at(text, pos);
      const char32_t c = cp.value;
      if (c == '"')
        out_ += "\\\"";
      else if (c == '\\')
        out_ += "\\\\";
      else if (c == '\n')
        out_ += "\\n";
      else if (c == '\r')
        out_ += "\\r";
      else if (c == '\t')
        out_ += "\\t";
      else if (c == '\b')
        out_ += "\\b";
      else if (c == '\f')
        out_ += "\\f";
      else if (c < 0x20 || (style_.ensure_ascii && c >= 0x7F))
        write_escape(c);
      else
        out_.append(text, pos, cp.length);
      pos += cp.length;
    }
    out_ += '"';
  }

  void write_escape(char32_t c) {
    if (c >= 0x10000) {
      const char32_t v = c - 0x10000;
      out_ += fmt::format("\\u{:04x}\\u{:04x}", static_cast<unsigned>(0xD800 + (v >> 10)),
                          static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
    } else {
      out_ += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    }
  }

  void newline(int depth) {
    if (!style_.indented) return;
    out_ += '\n';
    for (int i = 0; i < depth; ++i) out_ += style_.indent;
  }

  void write_list(const List& list, int depth) {
    if (list.empty()) {
      out_ += "[]";
      return;
    }
    out_ += '[';
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (i > 0) out_ += style_.item_separator;
      newline(depth + 1);
      write(list[i], depth + 1);
    }
    newline(depth);
    out_ += ']';
  }

  // json.dumps turns int, float, bool and None keys into strings; others it refuses.
  std::string key_text(const Value& key) {
    if (key.is_string()) return key.as_string();
    if (key.is_none()) return "null";
    if (key.is_bool()) return key.as_bool() ? "true" : "false";
    if (key.is_int()) return std::to_string(key.as_int());
    if (key.is_float()) return float_repr(key.as_float());
    fail_render("keys must be str, int, float, bool or None, not {}", type_name(key));
  }

  void write_dict(const Dict& dict, int depth) {
    if (dict.entries.empty()) {
      out_ += "{}";
      return;
    }
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& entry : dict.entries) entries.push_back(&entry);
    if (style_.sort_keys)
      std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return less(a->first, b->first); });
    out_ += '{';
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) out_ += style_.item_separator;
      newline(depth + 1);
      write_string(key_text(entries[i]->first));
      out_ += style_.key_separator;
      write(entries[i]->second, depth + 1);
    }
    newline(depth);
    out_ += '}';
  }

  const JsonStyle& style_;
  const std::function<void(std::size_t)>& check_size_;
  std::string out_;
};

}  // namespace

std::string to_json(const Value& value, const JsonStyle& style, const std::function<void(std::size_t)>& check_size) {
  JsonWriter writer(style, check_size);
  writer.write(value, 0);
  return writer.take();
}

}  // namespace pagedgen::jinja
