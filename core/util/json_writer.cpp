#include "util/json_writer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/json_quote.h"

namespace pagedgen {

std::string json_real(double value) { return fmt::format("{:.6g}", value); }

JsonObject& JsonObject::add(std::string_view key, std::string value) {
  fields_.push_back(Field{std::string(key), std::move(value), next_on_same_line_});
  next_on_same_line_ = false;
  return *this;
}

JsonObject& JsonObject::add_int(std::string_view key, int64_t value) { return add(key, fmt::format("{}", value)); }
JsonObject& JsonObject::add_real(std::string_view key, double value) { return add(key, json_real(value)); }
JsonObject& JsonObject::add_bool(std::string_view key, bool value) { return add(key, value ? "true" : "false"); }
JsonObject& JsonObject::add_string(std::string_view key, std::string_view text) { return add(key, json_quote(text)); }
JsonObject& JsonObject::add_object(std::string_view key, const JsonObject& object) {
  return add(key, object.inline_text());
}
JsonObject& JsonObject::add_array(std::string_view key, const JsonArray& array) { return add(key, array.text()); }
JsonObject& JsonObject::add_raw(std::string_view key, std::string json) { return add(key, std::move(json)); }

JsonObject& JsonObject::same_line() {
  next_on_same_line_ = true;
  return *this;
}

std::string JsonObject::inline_text() const {
  std::string out = "{";
  for (std::size_t i = 0; i < fields_.size(); ++i)
    out += fmt::format("{}{}: {}", i ? ", " : "", json_quote(fields_[i].key), fields_[i].value);
  return out + "}";
}

std::string JsonObject::lines_text() const {
  std::string out = "{";
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    const char* before = i == 0 ? "\n  " : fields_[i].same_line ? ", " : ",\n  ";
    out += fmt::format("{}{}: {}", before, json_quote(fields_[i].key), fields_[i].value);
  }
  return out + "\n}\n";
}

JsonArray& JsonArray::add_object(const JsonObject& object) {
  elements_.push_back(object.inline_text());
  return *this;
}

std::string JsonArray::text() const {
  if (!one_per_line_) return fmt::format("[{}]", fmt::join(elements_, ", "));
  if (elements_.empty()) return "[]";
  return fmt::format("[\n    {}\n  ]", fmt::join(elements_, ",\n    "));
}

}  // namespace pagedgen
