#include "grammar/json_pointer.h"

#include <algorithm>
#include <cctype>

namespace pagedgen {

using simdjson::dom::element;
using simdjson::dom::element_type;

std::string pointer_token(std::string_view key) {
  std::string out;
  for (const char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string unescape_pointer_token(std::string_view token) {
  std::string out;
  for (std::size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
      out += token[i + 1] == '0' ? '~' : '/';
      ++i;
    } else {
      out += token[i];
    }
  }
  return out;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::optional<element> JsonPointerResolver::resolve(const std::string& pointer) {
  element at = root_;
  for (std::size_t begin = 0; begin < pointer.size();) {  // pointer[begin] == '/'
    const std::size_t end = std::min(pointer.find('/', begin + 1), pointer.size());
    const std::string token = unescape_pointer_token(std::string_view(pointer).substr(begin + 1, end - begin - 1));
    if (at.type() == element_type::OBJECT) {
      const KeyIndex& keys = object_index(pointer.substr(0, begin), at);
      const auto it = keys.find(token);
      if (it == keys.end()) return std::nullopt;
      at = it->second;
    } else if (at.type() != element_type::ARRAY || at.at_pointer("/" + token).get(at) != simdjson::SUCCESS) {
      return std::nullopt;
    }
    begin = end;
  }
  return at;
}

const JsonPointerResolver::KeyIndex& JsonPointerResolver::object_index(const std::string& pointer, element object) {
  const auto [it, added] = object_keys_.try_emplace(pointer);
  if (added)
    for (const auto field : simdjson::dom::object(object)) it->second.emplace(std::string(field.key), field.value);
  return it->second;
}

}  // namespace pagedgen
