#include "util/byte_units.h"

#include <cctype>
#include <charconv>
#include <cmath>

#include "util/error.h"

namespace pagedgen {

uint64_t parse_byte_size(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  double number = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + i, number);
  if (i == 0 || ec != std::errc() || ptr != text.data() + i)
    fail("'{}' is not a byte size (examples: 1073741824, 512MiB, 2GiB, 1.5GB)", text);
  std::string unit;
  for (char c : text.substr(i))
    if (c != ' ') unit.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  double scale = 1;
  if (!unit.empty()) {
    const bool binary = unit.size() == 2 && unit[1] == 'I';
    if (unit.size() > 2 || (unit.size() == 2 && !binary))
      fail("'{}' has an unknown unit (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", text);
    const double base = binary ? 1024.0 : 1000.0;
    switch (unit[0]) {
      case 'K':
        scale = base;
        break;
      case 'M':
        scale = base * base;
        break;
      case 'G':
        scale = base * base * base;
        break;
      case 'T':
        scale = base * base * base * base;
        break;
      default:
        fail("'{}' has an unknown unit (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", text);
    }
  }
  const double bytes = std::floor(number * scale);
  if (!(bytes < 1.8e19)) fail("'{}' is too large", text);
  return static_cast<uint64_t>(bytes);
}

std::string format_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.{}f} {}", value, value < 10 ? 2 : 1, kUnits[unit]);
}

}  // namespace pagedgen
