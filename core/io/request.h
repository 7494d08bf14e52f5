// What the request reader yields for each non-blank input line: a Request to decode, or a
// RequestError that becomes that line's error record. `index` ties both to the input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sample/sampling_params.h"
#include "tokenizer/chat_template.h"

namespace pagedgen {

// Codes of RequestError, as written in error records. The engine adds its own codes for
// requests that are well formed but cannot run (e.g. a prompt longer than the context).
namespace request_error {
inline constexpr std::string_view kInvalidJson = "invalid_json";              // not parseable JSON
inline constexpr std::string_view kInvalidUtf8 = "invalid_utf8";              // bytes are not UTF-8
inline constexpr std::string_view kLineTooLong = "line_too_long";             // over the reader's limit
inline constexpr std::string_view kDuplicateField = "duplicate_field";        // a key given twice
inline constexpr std::string_view kMissingField = "missing_field";            // e.g. no prompt or messages
inline constexpr std::string_view kConflictingFields = "conflicting_fields";  // prompt and messages
inline constexpr std::string_view kInvalidType = "invalid_type";              // wrong JSON type
inline constexpr std::string_view kInvalidValue = "invalid_value";            // right type, bad value
inline constexpr std::string_view kWrongFormat = "wrong_format";              // a line of the other input format
inline constexpr std::string_view kUnsupportedField = "unsupported_field";    // an OpenAI field pagedgen cannot honour
}  // namespace request_error

struct Request {
  // 0-based line number in the input, blank lines included, so it maps back to the file
  // exactly (line N of an editor is index N - 1).
  uint64_t index = 0;
  // The "id" value's raw JSON text as written (e.g. "\"q-7\"" or "17"), echoed verbatim in
  // the output; nullopt when the line has no id or "id": null (written as null).
  std::optional<std::string> id_json;
  // The request key of rng.h's sample_seed: a string id's decoded text, a number id's
  // JSON text, or "#<index>" when there is no id.
  std::string seed_key;
  // Exactly one of them: plain text, a chat conversation for the model's template, or token
  // ids (a pre-tokenized prompt, used as given).
  std::variant<std::string, ChatRequest, std::vector<TokenId>> input;
  // The command-line defaults with this line's sampling fields applied; validated.
  SamplingParams sampling;
  // OpenAI batch lines: the body's "model", echoed in the response; it never picks weights.
  std::optional<std::string> model;

  bool is_chat() const { return std::holds_alternative<ChatRequest>(input); }
  const std::string& prompt() const { return std::get<std::string>(input); }
  const ChatRequest& chat() const { return std::get<ChatRequest>(input); }
  const std::vector<TokenId>* prompt_token_ids() const { return std::get_if<std::vector<TokenId>>(&input); }
};

struct RequestError {
  uint64_t index = 0;                  // as in Request
  std::optional<std::string> id_json;  // as in Request, when the id could be read
  std::string code;                    // one of request_error::k*
  std::string message;                 // names the field and what is allowed
};

using RequestItem = std::variant<Request, RequestError>;

inline uint64_t item_index(const RequestItem& item) {
  return std::visit([](const auto& i) { return i.index; }, item);
}

}  // namespace pagedgen
