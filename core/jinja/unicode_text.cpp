// Code points, whitespace and case over UTF-8, as Python's str methods see them. Case
// mapping covers Latin-1, Latin Extended-A, Greek and Cyrillic (the one-to-one mappings);
// other scripts are left as they are.
#include "jinja/unicode_text.h"

namespace pagedgen::jinja {

CodePoint decode_at(std::string_view text, std::size_t pos) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  if (lead < 0x80) return {lead, 1};
  std::size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
  if (length == 0 || lead > 0xF4 || pos + length > text.size()) return {0xFFFD, 1};
  char32_t value = lead & (0x7F >> length);
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) return {0xFFFD, 1};
    value = (value << 6) | (byte(pos + i) & 0x3F);
  }
  static constexpr char32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (value < kMinimum[length] || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return {0xFFFD, 1};
  return {value, length};
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::vector<std::size_t> code_point_offsets(std::string_view text) {
  std::vector<std::size_t> offsets;
  offsets.reserve(text.size() + 1);
  for (std::size_t pos = 0; pos < text.size(); pos += decode_at(text, pos).length) offsets.push_back(pos);
  offsets.push_back(text.size());
  return offsets;
}

std::size_t code_point_count(std::string_view text) {
  std::size_t count = 0;
  for (std::size_t pos = 0; pos < text.size(); pos += decode_at(text, pos).length) ++count;
  return count;
}

bool is_python_space(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

namespace {

bool in_chars(char32_t c, const std::string_view* chars) {
  if (chars == nullptr) return is_python_space(c);
  for (std::size_t pos = 0; pos < chars->size();) {
    const CodePoint cp = decode_at(*chars, pos);
    if (cp.value == c) return true;
    pos += cp.length;
  }
  return false;
}

}  // namespace

std::string_view strip(std::string_view text, StripSide side, const std::string_view* chars) {
  std::size_t begin = 0;
  if (side != StripSide::kRight) {
    while (begin < text.size()) {
      const CodePoint cp = decode_at(text, begin);
      if (!in_chars(cp.value, chars)) break;
      begin += cp.length;
    }
  }
  std::size_t end = text.size();
  if (side != StripSide::kLeft) {
    const std::vector<std::size_t> offsets = code_point_offsets(text.substr(begin));
    for (std::size_t i = offsets.size() - 1; i > 0; --i) {
      if (!in_chars(decode_at(text, begin + offsets[i - 1]).value, chars)) break;
      end = begin + offsets[i - 1];
    }
  }
  return text.substr(begin, end - begin);
}

std::vector<std::string> split_whitespace(std::string_view text, std::int64_t max_splits) {
  std::vector<std::string> parts;
  std::size_t pos = 0;
  for (;;) {
    while (pos < text.size() && is_python_space(decode_at(text, pos).value)) pos += decode_at(text, pos).length;
    if (pos >= text.size()) return parts;
    if (max_splits >= 0 && static_cast<std::int64_t>(parts.size()) == max_splits) {
      parts.emplace_back(strip(text.substr(pos), StripSide::kRight));
      return parts;
    }
    const std::size_t start = pos;
    while (pos < text.size() && !is_python_space(decode_at(text, pos).value)) pos += decode_at(text, pos).length;
    parts.emplace_back(text.substr(start, pos - start));
  }
}

char32_t to_upper(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149) {
    const bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (odd_upper ? (c % 2 == 0) : (c % 2 == 1)) return c - 1;
    return c;
  }
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

char32_t to_lower(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149) {
    const bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (odd_upper ? (c % 2 == 1) : (c % 2 == 0)) return c + 1;
    return c;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

bool is_cased_letter(char32_t c) { return to_upper(c) != c || to_lower(c) != c; }

namespace {

template <typename Map>
std::string map_code_points(std::string_view text, Map map) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t pos = 0, index = 0; pos < text.size(); ++index) {
    const CodePoint cp = decode_at(text, pos);
    append_utf8(out, map(cp.value, index));
    pos += cp.length;
  }
  return out;
}

}  // namespace

std::string upper(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    const CodePoint cp = decode_at(text, pos);
    if (cp.value == 0xDF)
      out += "SS";  // ß has no one-letter capital: Python writes "SS"
    else
      append_utf8(out, to_upper(cp.value));
    pos += cp.length;
  }
  return out;
}

std::string lower(std::string_view text) {
  return map_code_points(text, [](char32_t c, std::size_t) { return to_lower(c); });
}

std::string capitalize(std::string_view text) {
  return map_code_points(text, [](char32_t c, std::size_t index) { return index == 0 ? to_upper(c) : to_lower(c); });
}

std::string python_title(std::string_view text) {
  bool previous_cased = false;
  return map_code_points(text, [&](char32_t c, std::size_t) {
    const char32_t mapped = previous_cased ? to_lower(c) : to_upper(c);
    previous_cased = is_cased_letter(c);
    return mapped;
  });
}

}  // namespace pagedgen::jinja
