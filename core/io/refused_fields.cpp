#include "io/refused_fields.h"

#include <fmt/format.h>

#include <array>

#include "io/json_values.h"
#include "io/request.h"

namespace pagedgen::json_fields {

namespace {

// What a refused key may hold beside the empty values without asking for anything.
enum class Neutral : uint8_t {
  kEmpty,       // null, false, 0, "", [], {}
  kOne,         // those, or 1 (best_of, length_penalty)
  kTrue,        // null or true (a default pagedgen follows: parallel_tool_calls)
  kTextOnly,    // those, or ["text"] (modalities)
  kNoneString,  // those, or "none" or "auto" (tool_choice, function_call: the model decides)
};

struct RefusedField {
  std::string_view key;
  Neutral neutral;
  std::string_view why;
};

// OpenAI chat-completions and completions keys, then vLLM's extensions, that change the
// output and are not implemented.
constexpr std::array<RefusedField, 18> kRefusedFields = {{
    {"stream", Neutral::kEmpty, "responses are written whole, one output line per request"},
    {"stream_options", Neutral::kEmpty, "it applies to streaming, which pagedgen does not do"},
    {"suffix", Neutral::kEmpty, "text insertion (a suffix after the completion) is not implemented"},
    {"best_of", Neutral::kOne, "best-of ranking is not implemented; ask for n samples instead"},
    // tools go to the chat template; a call the model writes stays text in the output.
    {"tool_choice", Neutral::kNoneString,
     "tools are passed to the chat template, but a tool call cannot be forced and is not parsed from the output"},
    {"parallel_tool_calls", Neutral::kTrue,
     "tools are passed to the chat template, but the number of tool calls cannot be limited"},
    {"functions", Neutral::kEmpty, "function calls are not implemented"},
    {"function_call", Neutral::kNoneString, "function calls are not implemented"},
    {"modalities", Neutral::kTextOnly, "pagedgen writes text only"},
    {"audio", Neutral::kEmpty, "pagedgen writes text only"},
    {"prediction", Neutral::kEmpty, "predicted outputs are not implemented"},
    {"web_search_options", Neutral::kEmpty, "web search is not implemented"},
    {"reasoning_effort", Neutral::kEmpty, "reasoning effort is not a setting pagedgen can apply to its models"},
    {"verbosity", Neutral::kEmpty, "verbosity is not a setting pagedgen can apply to its models"},
    {"use_beam_search", Neutral::kEmpty, "beam search is not implemented"},
    {"length_penalty", Neutral::kOne, "it applies to beam search, which is not implemented"},
    {"logits_processors", Neutral::kEmpty, "custom logits processors are not implemented"},
    {"chat_template", Neutral::kEmpty, "one template renders the whole run: give it with --chat-template FILE"},
}};

// null, false, 0, "", [], {}.
bool is_empty_value(od::value value) {
  switch (type_of(value)) {
    case od::json_type::null:
      return true;
    case od::json_type::boolean:
      return !read_bool(value, "");
    case od::json_type::number:
      return read_number(value, "") == 0;
    case od::json_type::string:
      return read_string(value, "").empty();
    case od::json_type::array: {
      std::size_t count = 0;
      return value.count_elements().get(count) == simdjson::SUCCESS && count == 0;
    }
    case od::json_type::object: {
      std::size_t count = 0;
      return value.count_fields().get(count) == simdjson::SUCCESS && count == 0;
    }
  }
  return false;
}

// [] or ["text"].
bool is_text_only(od::value value) {
  od::array array;
  if (value.get_array().get(array) != simdjson::SUCCESS) return false;
  std::size_t count = 0;
  bool text = false;
  for (auto element : array) {
    od::value item;
    if (element.get(item) != simdjson::SUCCESS) return false;
    ++count;
    text = type_of(item) == od::json_type::string && read_string(item, "") == "text";
  }
  return count == 0 || (count == 1 && text);
}

bool is_neutral(od::value value, Neutral neutral) {
  const od::json_type type = type_of(value);
  switch (neutral) {
    case Neutral::kEmpty:
      return is_empty_value(value);
    case Neutral::kOne: {
      if (type != od::json_type::number) return is_empty_value(value);
      const double number = read_number(value, "");
      return number == 0 || number == 1;
    }
    case Neutral::kTrue:
      return type == od::json_type::null || (type == od::json_type::boolean && read_bool(value, ""));
    case Neutral::kTextOnly:
      return type == od::json_type::array ? is_text_only(value) : is_empty_value(value);
    case Neutral::kNoneString: {
      if (type != od::json_type::string) return is_empty_value(value);
      const std::string text = read_string(value, "");
      return text.empty() || text == "none" || text == "auto";
    }
  }
  return false;
}

}  // namespace

bool check_refused_field(std::string_view key, od::value value, std::string_view path) {
  for (const RefusedField& field : kRefusedFields) {
    if (field.key != key) continue;
    if (!is_neutral(value, field.neutral))
      throw_line_error(
          request_error::kUnsupportedField,
          fmt::format("{} is not supported by pagedgen ({}); remove it or give its default", path, field.why));
    return true;
  }
  return false;
}

}  // namespace pagedgen::json_fields
