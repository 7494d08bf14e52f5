// JSON pointers into a schema document (RFC 6901, as $ref uses them after '#'): a key as a
// reference token and back, the percent-decoding of a $ref's fragment, and resolution of a
// pointer to its element, each object on the way indexed by key once, so that thousands of
// $refs into one $defs cost one lookup each.
#pragma once

#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace pagedgen {

// A key as a reference token: '~' as "~0", '/' as "~1".
std::string pointer_token(std::string_view key);

// A reference token's key: "~1" is '/', "~0" is '~'.
std::string unescape_pointer_token(std::string_view token);

// A URI fragment's %XX escapes decoded ("e%20f" is "e f").
std::string percent_decode(std::string_view text);

class JsonPointerResolver {
 public:
  // `root` (its document) must outlive the resolver.
  explicit JsonPointerResolver(simdjson::dom::element root) : root_(root) {}

  // The element `pointer` ("" for the root, else "/token/token...") names; nullopt when none.
  std::optional<simdjson::dom::element> resolve(const std::string& pointer);

 private:
  using KeyIndex = std::unordered_map<std::string, simdjson::dom::element>;
  // The keys of the object at `pointer` (the first of a key given twice, as lookups find).
  const KeyIndex& object_index(const std::string& pointer, simdjson::dom::element object);

  simdjson::dom::element root_;
  std::unordered_map<std::string, KeyIndex> object_keys_;  // by the object's pointer
};

}  // namespace pagedgen
