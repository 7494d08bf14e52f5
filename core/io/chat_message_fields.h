// A chat conversation read from a request line: [{"role": "...", "content": "..." or
// [{"type": "text", "text": "..."}]}]. Internal to core/io.
#pragma once

#include <simdjson.h>

#include <string_view>
#include <vector>

#include "tokenizer/chat_template.h"

namespace pagedgen::json_fields {

std::vector<ChatMessage> read_messages(simdjson::ondemand::value value, std::string_view path);

}  // namespace pagedgen::json_fields
