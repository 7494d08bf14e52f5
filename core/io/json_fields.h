// Reading request fields from simdjson on-demand values, with errors that name the field
// and what it allows. Internal to core/io (the input formats share it); simdjson types
// never appear in a header outside core/io.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sample/sampling_params.h"
#include "tokenizer/chat_template.h"

namespace pagedgen::json_fields {

namespace od = simdjson::ondemand;

// A problem with one input line; the request parser turns it into a RequestError.
struct LineError {
  std::string_view code;  // request_error::k*
  std::string message;
};

[[noreturn]] void throw_line_error(std::string_view code, std::string message);

// Adds `key` to the keys seen so far in one object; throws LineError(duplicate_field) when
// it is there already. `path` names the object in the message ("" for the line itself).
void add_unique_key(std::vector<std::string>& keys, std::string_view key, std::string_view path);

// A few words on what is wrong for a simdjson parse error ("unbalanced braces or ...").
std::string_view short_json_message(simdjson::error_code error);

// Throws LineError(invalid_json) for a simdjson error met while walking a document that
// iterate() accepted. `document` and `line_begin` let the message give the byte offset
// where simdjson stopped, when it knows it.
[[noreturn]] void throw_json_error(simdjson::error_code error, od::document& document,
                                   const char* line_begin);

// Throws LineError(invalid_json) for an error of iterate() itself (a raw control character
// or an unclosed string, found before any value is read). Such a document was never
// started and must not be asked where it stopped: the offset is found in `line` instead.
[[noreturn]] void throw_unparsed_json_error(simdjson::error_code error, std::string_view line);

// How deeply objects and lists may nest in a line (the line's own object is level 1). A
// request needs about 5 levels; the limit keeps validate_value's recursion, and the
// paths it builds, small whatever the input.
inline constexpr int kMaxNestingLevels = 128;

// Walks the whole value so that every token is checked (on-demand parsing checks a value
// only when it is read): invalid_json for bad syntax or nesting past kMaxNestingLevels,
// duplicate_field for a key given twice in one object. `path` names the value in messages
// ("messages[0]"); `level` is how deep the value sits (a field of the line: level 2).
void validate_value(od::value value, const std::string& path, od::document& document,
                    const char* line_begin, int level = 2);

std::string_view type_name(od::json_type type);
// The value's JSON type; the line was validated first, so this does not fail.
od::json_type type_of(od::value& value);
// The token's JSON text without the whitespace that follows it.
std::string_view token_text(od::value& value);

std::string read_string(od::value value, std::string_view path);
double read_number(od::value value, std::string_view path);
int32_t read_int32(od::value value, std::string_view path);
uint64_t read_uint64(od::value value, std::string_view path);
bool read_bool(od::value value, std::string_view path);

// A chat conversation: [{"role": "...", "content": "..." or [{"type": "text", "text": "..."}]}].
std::vector<ChatMessage> read_messages(od::value value, std::string_view path);

// Applies one top-level sampling field to `params` (null keeps the default). Returns false
// when `key` names no sampling field. Fields: temperature, top_p, top_k (-1 = off, as in
// vLLM), min_p, seed, stop (string or list), stop_token_ids, max_tokens, min_tokens,
// ignore_eos, n, presence_penalty, frequency_penalty, repetition_penalty, logit_bias
// ({"<token id>": bias}). logprobs is each format's own (its type differs).
bool read_sampling_field(std::string_view key, od::value value, SamplingParams& params);

}  // namespace pagedgen::json_fields
