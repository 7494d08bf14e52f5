// JSON objects and arrays as pagedgen's stats, plan and sweep files lay them out: fields in
// the order added, `"key": value` joined by ", ", reals with 6 significant digits. An
// object is written on one line (inline_text) or, at the top of a file, one line per field
// or per group of fields (lines_text, same_line()); an array of rows may put one element
// per line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pagedgen {

class JsonArray;

class JsonObject {
 public:
  JsonObject& add_int(std::string_view key, int64_t value);
  JsonObject& add_real(std::string_view key, double value);
  JsonObject& add_bool(std::string_view key, bool value);
  JsonObject& add_string(std::string_view key, std::string_view text);  // quoted and escaped
  JsonObject& add_object(std::string_view key, const JsonObject& object);
  JsonObject& add_array(std::string_view key, const JsonArray& array);
  JsonObject& add_raw(std::string_view key, std::string json);  // already JSON (e.g. an id as read)
  // In lines_text, the next field goes on the line of the one before.
  JsonObject& same_line();
  // {"a": 1, "b": {"c": 2}}
  std::string inline_text() const;
  // "{\n  \"a\": 1,\n  \"b\": {\"c\": 2}\n}\n"
  std::string lines_text() const;

 private:
  struct Field {
    std::string key;
    std::string value;  // as JSON
    bool same_line = false;
  };
  JsonObject& add(std::string_view key, std::string value);

  std::vector<Field> fields_;
  bool next_on_same_line_ = false;
};

class JsonArray {
 public:
  // one_per_line: written as "[\n    e0,\n    e1\n  ]" (an array of rows, a field of a
  // lines_text object); else [e0, e1].
  explicit JsonArray(bool one_per_line = false) : one_per_line_(one_per_line) {}
  JsonArray& add_object(const JsonObject& object);
  std::string text() const;

 private:
  bool one_per_line_;
  std::vector<std::string> elements_;
};

// A real as the files write it: 6 significant digits ("{:.6g}").
std::string json_real(double value);

}  // namespace pagedgen
