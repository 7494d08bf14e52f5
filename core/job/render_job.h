// The render job behind `pagedgen render`: each input line's prompt as the model would see it
// (a conversation through the chat template, special-token text included), as text or token
// ids, without loading weights, so a template can be checked before a long run. One output
// line per non-blank input line, in input order:
//   {"id":ID,"index":N,"prompt":"..."}         (with ids: "prompt":[1,2,3])
//   {"id":ID,"index":N,"error":{"code":"...","message":"..."}}
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <ostream>

#include "io/request_parser.h"
#include "job/prompt_builder.h"

namespace pagedgen {

struct RenderSettings {
  std::optional<RequestFormat> format;  // nullopt: detected from the first JSON object line
  bool ids = false;                     // token ids instead of text
};

struct RenderSummary {
  uint64_t num_lines = 0;        // output lines written
  uint64_t num_error_lines = 0;  // of which error records
};

// Throws Error when the input cannot be read or the output written.
RenderSummary render_prompts(std::istream& input, std::ostream& output, const PromptBuilder& builder,
                             const RenderSettings& settings);

}  // namespace pagedgen
