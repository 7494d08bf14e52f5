// Rounding JSON numbers to counts and 64-bit integer bounds.
#include "grammar/json_schema_bounds.h"

#include <cmath>
#include <limits>

#include "util/error.h"

namespace pagedgen {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr double kTwo63 = 9223372036854775808.0;

}  // namespace

uint64_t read_count(element value, const std::string& location, std::string_view keyword) {
  if (value.type() == element_type::UINT64) return uint64_t(value);
  if (value.type() == element_type::INT64 && int64_t(value) >= 0) return static_cast<uint64_t>(int64_t(value));
  if (value.type() == element_type::DOUBLE) {
    const double d = double(value);
    if (d >= 0 && std::floor(d) == d && d < 1.8e19) return static_cast<uint64_t>(d);
  }
  fail("{}: '{}' must be a non-negative integer", location, keyword);
}

int64_t integer_lower_bound(element value, bool exclusive, const std::string& location, std::string_view keyword) {
  const auto beyond = [&]() -> int64_t {
    fail("{}: '{}' leaves no integer within 64 bits; use a smaller bound", location, keyword);
  };
  switch (value.type()) {
    case element_type::INT64: {
      const int64_t v = int64_t(value);
      if (!exclusive) return v;
      return v == std::numeric_limits<int64_t>::max() ? beyond() : v + 1;
    }
    case element_type::UINT64:
      return beyond();  // simdjson gives UINT64 only above int64
    case element_type::DOUBLE: {
      const double d = exclusive ? std::floor(double(value)) + 1 : std::ceil(double(value));
      if (d < -kTwo63) return std::numeric_limits<int64_t>::min();
      return d >= kTwo63 ? beyond() : static_cast<int64_t>(d);
    }
    default:
      fail("{}: '{}' must be a number", location, keyword);
  }
}

int64_t integer_upper_bound(element value, bool exclusive, const std::string& location, std::string_view keyword) {
  const auto beyond = [&]() -> int64_t {
    fail("{}: '{}' leaves no integer within 64 bits; use a larger bound", location, keyword);
  };
  switch (value.type()) {
    case element_type::INT64: {
      const int64_t v = int64_t(value);
      if (!exclusive) return v;
      return v == std::numeric_limits<int64_t>::min() ? beyond() : v - 1;
    }
    case element_type::UINT64:
      return std::numeric_limits<int64_t>::max();
    case element_type::DOUBLE: {
      const double d = exclusive ? std::ceil(double(value)) - 1 : std::floor(double(value));
      if (d >= kTwo63) return std::numeric_limits<int64_t>::max();
      return d < -kTwo63 ? beyond() : static_cast<int64_t>(d);
    }
    default:
      fail("{}: '{}' must be a number", location, keyword);
  }
}

}  // namespace pagedgen
