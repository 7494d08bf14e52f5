// GGUF metadata lookups: value type names, find by key, and the typed getters with
// their conversions (integer widths convert when the value fits; anything else is Error).
#include <limits>

#include "model/gguf.h"
#include "util/error.h"

namespace pagedgen {
namespace {

bool is_integer_type(GgufValueType type) {
  switch (type) {
    case GgufValueType::UINT8:
    case GgufValueType::INT8:
    case GgufValueType::UINT16:
    case GgufValueType::INT16:
    case GgufValueType::UINT32:
    case GgufValueType::INT32:
    case GgufValueType::UINT64:
    case GgufValueType::INT64:
      return true;
    default:
      return false;
  }
}

// Integer value of `v` when it is one, as a wide signed/unsigned pair.
struct IntegerValue {
  bool negative;
  uint64_t magnitude;  // the value itself when not negative
  int64_t as_signed;   // valid when negative
};

std::optional<IntegerValue> integer_of(const GgufValue& v) {
  if (!is_integer_type(v.type)) return std::nullopt;
  if (const auto* u = std::get_if<uint64_t>(&v.value)) return IntegerValue{false, *u, 0};
  const int64_t s = std::get<int64_t>(v.value);
  if (s < 0) return IntegerValue{true, 0, s};
  return IntegerValue{false, static_cast<uint64_t>(s), s};
}

}  // namespace

std::string_view gguf_value_type_name(GgufValueType type) {
  switch (type) {
    case GgufValueType::UINT8:
      return "uint8";
    case GgufValueType::INT8:
      return "int8";
    case GgufValueType::UINT16:
      return "uint16";
    case GgufValueType::INT16:
      return "int16";
    case GgufValueType::UINT32:
      return "uint32";
    case GgufValueType::INT32:
      return "int32";
    case GgufValueType::FLOAT32:
      return "float32";
    case GgufValueType::BOOL:
      return "bool";
    case GgufValueType::STRING:
      return "string";
    case GgufValueType::ARRAY:
      return "array";
    case GgufValueType::UINT64:
      return "uint64";
    case GgufValueType::INT64:
      return "int64";
    case GgufValueType::FLOAT64:
      return "float64";
  }
  return "unknown";
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

namespace {

[[noreturn]] void wrong_type(const std::filesystem::path& path, std::string_view key, const GgufValue& value,
                             std::string_view wanted) {
  std::string actual(gguf_value_type_name(value.type));
  if (const auto* array = std::get_if<GgufArray>(&value.value)) {
    actual = fmt::format("array of {}", gguf_value_type_name(array->element_type));
  }
  fail("{}: metadata key '{}' is {}, expected {}", path.string(), key, actual, wanted);
}

uint64_t to_uint(const std::filesystem::path& path, std::string_view key, const GgufValue& v) {
  const std::optional<IntegerValue> integer = integer_of(v);
  if (!integer) wrong_type(path, key, v, "an unsigned integer");
  if (integer->negative) {
    fail("{}: metadata key '{}' is {}, expected a value >= 0", path.string(), key, integer->as_signed);
  }
  return integer->magnitude;
}

int64_t to_int(const std::filesystem::path& path, std::string_view key, const GgufValue& v) {
  const std::optional<IntegerValue> integer = integer_of(v);
  if (!integer) wrong_type(path, key, v, "an integer");
  if (integer->negative) return integer->as_signed;
  if (integer->magnitude > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    fail("{}: metadata key '{}' is {}, too large for a signed 64-bit integer", path.string(), key, integer->magnitude);
  }
  return static_cast<int64_t>(integer->magnitude);
}

// Floats, and integers too: some converters store e.g. rope.freq_base as an integer.
double to_float(const std::filesystem::path& path, std::string_view key, const GgufValue& v) {
  if (const auto* d = std::get_if<double>(&v.value)) return *d;
  if (const auto* u = std::get_if<uint64_t>(&v.value)) return static_cast<double>(*u);
  if (const auto* s = std::get_if<int64_t>(&v.value)) return static_cast<double>(*s);
  wrong_type(path, key, v, "a number");
}

const GgufArray& to_array(const std::filesystem::path& path, std::string_view key, const GgufValue& v,
                          std::string_view wanted) {
  const auto* array = std::get_if<GgufArray>(&v.value);
  if (array == nullptr) wrong_type(path, key, v, wanted);
  return *array;
}

}  // namespace

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  const auto* text = std::get_if<std::string>(&v->value);
  if (text == nullptr) wrong_type(path(), key, *v, "a string");
  return *text;
}

std::optional<uint64_t> GgufFile::get_uint(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  return to_uint(path(), key, *v);
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  return to_int(path(), key, *v);
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  return to_float(path(), key, *v);
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  const auto* flag = std::get_if<bool>(&v->value);
  if (flag == nullptr) wrong_type(path(), key, *v, "a bool");
  return *flag;
}

std::optional<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  const GgufArray& array = to_array(path(), key, *v, "an array of strings");
  if (array.element_type != GgufValueType::STRING) wrong_type(path(), key, *v, "an array of strings");
  std::vector<std::string> out;
  out.reserve(array.items.size());
  for (const GgufValue& item : array.items) out.push_back(std::get<std::string>(item.value));
  return out;
}

std::optional<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  const GgufArray& array = to_array(path(), key, *v, "an array of numbers");
  if (array.element_type == GgufValueType::STRING || array.element_type == GgufValueType::BOOL ||
      array.element_type == GgufValueType::ARRAY) {
    wrong_type(path(), key, *v, "an array of numbers");
  }
  std::vector<float> out;
  out.reserve(array.items.size());
  for (const GgufValue& item : array.items) {
    out.push_back(static_cast<float>(to_float(path(), key, item)));
  }
  return out;
}

std::optional<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  const GgufArray& array = to_array(path(), key, *v, "an array of integers");
  if (!is_integer_type(array.element_type)) wrong_type(path(), key, *v, "an array of integers");
  std::vector<int64_t> out;
  out.reserve(array.items.size());
  for (const GgufValue& item : array.items) out.push_back(to_int(path(), key, item));
  return out;
}

}  // namespace pagedgen
