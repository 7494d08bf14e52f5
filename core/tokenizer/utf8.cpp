// UTF-8 stepping and repair, following the Unicode "maximal subpart" rule: an ill-formed
// sequence is replaced by one U+FFFD per longest prefix that could have started a
// well-formed character.
#include "tokenizer/utf8.h"

namespace pagedgen {
namespace {

bool is_continuation(unsigned char byte, unsigned char low = 0x80, unsigned char high = 0xBF) {
  return byte >= low && byte <= high;
}

}  // namespace

Utf8Step utf8_next(std::string_view text, size_t pos) {
  const auto byte_at = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte_at(pos);
  if (lead < 0x80) return {Utf8Status::Valid, 1, lead};

  // Sequence length and the allowed range of the second byte (which excludes overlong
  // forms, surrogates and code points above U+10FFFF).
  size_t length = 0;
  unsigned char second_low = 0x80;
  unsigned char second_high = 0xBF;
  char32_t code_point = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code_point = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code_point = lead & 0x0F;
    if (lead == 0xE0) second_low = 0xA0;
    if (lead == 0xED) second_high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code_point = lead & 0x07;
    if (lead == 0xF0) second_low = 0x90;
    if (lead == 0xF4) second_high = 0x8F;
  } else {
    return {Utf8Status::Invalid, 1, 0};
  }

  for (size_t i = 1; i < length; ++i) {
    if (pos + i >= text.size()) return {Utf8Status::Truncated, i, 0};
    const unsigned char byte = byte_at(pos + i);
    const bool ok = i == 1 ? is_continuation(byte, second_low, second_high) : is_continuation(byte);
    if (!ok) return {Utf8Status::Invalid, i, 0};
    code_point = (code_point << 6) | (byte & 0x3F);
  }
  return {Utf8Status::Valid, length, code_point};
}

size_t utf8_complete_prefix(std::string_view bytes) {
  // Only the last character can be unfinished, and its bytes so far are at most 3: start
  // stepping 3 bytes from the end. Landing inside an earlier character is harmless, its
  // continuation bytes step as invalid (finished) bytes.
  size_t pos = bytes.size() > 3 ? bytes.size() - 3 : 0;
  while (pos < bytes.size()) {
    const Utf8Step step = utf8_next(bytes, pos);
    if (step.status == Utf8Status::Truncated) return pos;
    pos += step.length;
  }
  return bytes.size();
}

bool utf8_is_valid(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Step step = utf8_next(text, pos);
    if (step.status != Utf8Status::Valid) return false;
    pos += step.length;
  }
  return true;
}

std::string utf8_sanitize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Step step = utf8_next(text, pos);
    if (step.status == Utf8Status::Valid) {
      out.append(text.substr(pos, step.length));
    } else {
      out.append(kReplacementChar);
    }
    pos += step.length;
  }
  return out;
}

void utf8_append(std::string& out, char32_t code_point) {
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    if (code_point >= 0xD800 && code_point <= 0xDFFF) {
      out.append(kReplacementChar);
      return;
    }
    out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point <= 0x10FFFF) {
    out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out.append(kReplacementChar);
  }
}

}  // namespace pagedgen
