// The "prompt" field of plain lines and completions bodies: text, or a list of token ids
// (pre-tokenized text, as the completions API and vLLM take it), checked here for shape and
// sign and against the model's vocabulary when the prompt is built (job/prompt_builder.h).
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "io/json_values.h"
#include "step/ids.h"

namespace pagedgen::json_fields {

// A non-empty string or a non-empty list of token ids >= 0; throws LineError naming `path`.
std::variant<std::string, std::vector<TokenId>> read_prompt(od::value value, std::string_view path);

}  // namespace pagedgen::json_fields
