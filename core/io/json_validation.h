// A line's whole JSON checked before any field is read (on-demand parsing checks a value
// only when it is read): syntax, nesting depth, keys given twice. Internal to core/io.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "util/stop_token.h"

namespace pagedgen::json_fields {

namespace od = simdjson::ondemand;

// The keys seen so far in one object, looked up in constant time (a line may hold hundreds
// of thousands: a logit_bias over a whole vocabulary).
using SeenKeys = std::unordered_set<std::string>;

// Adds `key` to the keys seen so far in one object; throws LineError(duplicate_field) when
// it is there already. `path` names the object in the message ("" for the line itself).
void add_unique_key(SeenKeys& keys, std::string_view key, std::string_view path);

// How deeply objects and lists may nest in a line (the line's own object is level 1). A
// request needs about 5 levels; the limit keeps validate_value's recursion, and the
// paths it builds, small whatever the input.
inline constexpr int kMaxNestingLevels = 128;

// Walks the whole value so that every token is checked: invalid_json for bad syntax or
// nesting past kMaxNestingLevels, duplicate_field for a key given twice in one object.
// `path` names the value in messages ("messages[0]"); `level` is how deep the value sits
// (a field of the line: level 2).
// `poll` ticks once per value (Stopped when its token asks).
void validate_value(od::value value, const std::string& path, od::document& document, const char* line_begin,
                    StopPoll& poll, int level = 2);

}  // namespace pagedgen::json_fields
