// Splits a range until each piece has one encoded length and, below its first differing
// byte, covers every continuation byte: then each byte position is one range.
#include "grammar/utf8_ranges.h"

namespace pagedgen {
namespace {

constexpr std::array<char32_t, 4> kLastOfLength = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};

int encoded_length(char32_t c) {
  int length = 1;
  while (c > kLastOfLength[length - 1]) ++length;
  return length;
}

std::array<uint8_t, 4> encode(char32_t c, int length) {
  static constexpr std::array<uint8_t, 4> kLeadBits = {0x00, 0xC0, 0xE0, 0xF0};
  std::array<uint8_t, 4> out{};
  for (int i = length - 1; i > 0; --i, c >>= 6) out[i] = static_cast<uint8_t>(0x80 | (c & 0x3F));
  out[0] = static_cast<uint8_t>(kLeadBits[length - 1] | c);
  return out;
}

}  // namespace

std::vector<Utf8Pattern> utf8_patterns(CodePointRange range) {
  std::vector<Utf8Pattern> out;
  std::vector<CodePointRange> pending{range};  // a stack: each split pushes its later half first
  while (!pending.empty()) {
    CodePointRange r = pending.back();
    pending.pop_back();
    if (r.first > r.last) continue;
    if (r.first <= 0xDFFF && r.last >= 0xD800) {  // cut the surrogates out
      pending.push_back({0xE000, r.last});
      pending.push_back({r.first, 0xD7FF});
      continue;
    }
    const int length = encoded_length(r.first);
    if (encoded_length(r.last) != length) {
      pending.push_back({kLastOfLength[length - 1] + 1, r.last});
      pending.push_back({r.first, kLastOfLength[length - 1]});
      continue;
    }
    bool split = false;
    for (int i = 1; i < length && !split; ++i) {
      const char32_t low_bits = (char32_t{1} << (6 * i)) - 1;  // the last i continuation bytes
      if ((r.first & ~low_bits) == (r.last & ~low_bits)) continue;
      if ((r.first & low_bits) != 0) {
        pending.push_back({(r.first | low_bits) + 1, r.last});
        pending.push_back({r.first, r.first | low_bits});
        split = true;
      } else if ((r.last & low_bits) != low_bits) {
        pending.push_back({r.last & ~low_bits, r.last});
        pending.push_back({r.first, (r.last & ~low_bits) - 1});
        split = true;
      }
    }
    if (split) continue;
    const auto first = encode(r.first, length), last = encode(r.last, length);
    Utf8Pattern pattern{{}, static_cast<uint8_t>(length)};
    for (int i = 0; i < length; ++i) pattern.bytes[i] = {first[i], last[i]};
    out.push_back(pattern);
  }
  return out;
}

}  // namespace pagedgen
