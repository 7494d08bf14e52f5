#include "io/chat_template_kwargs.h"

#include <simdjson.h>

#include "io/chat_message_fields.h"
#include "io/json_line_errors.h"
#include "util/error.h"
#include "util/json_quote.h"

namespace pagedgen {

ChatTemplateKwargs parse_chat_template_kwargs(std::string_view text) {
  const simdjson::padded_string padded(text);
  // The DOM parser checks the whole text (one value, nothing after it); on demand reads it.
  simdjson::dom::parser checker;
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document document;
  simdjson::ondemand::value value;
  if (checker.parse(padded).error() || parser.iterate(padded).get(document) || document.get_value().get(value))
    fail("must be a JSON object such as {{\"enable_thinking\": false}}, got '{}'", text);
  try {
    return json_fields::read_chat_template_kwargs(value, "chat_template_kwargs");
  } catch (const json_fields::LineError& error) {
    fail("{}", error.message);
  }
}

std::string format_chat_template_kwargs(const ChatTemplateKwargs& kwargs) {
  std::string out = "{";
  for (const auto& [name, value] : kwargs) {
    if (out.size() > 1) out += ", ";
    append_json_string(out, name);
    out += ": " + value;
  }
  return out + "}";
}

}  // namespace pagedgen
