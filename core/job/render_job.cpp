#include "job/render_job.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/plain_output.h"
#include "io/request_reader.h"
#include "util/error.h"
#include "util/json_quote.h"

namespace pagedgen {

namespace {

// The prompt's JSON value (a string, or a list of token ids), or the line's error.
std::variant<std::string, RequestError> prompt_json(const RequestItem& item, const PromptBuilder& builder, bool ids) {
  if (const auto* error = std::get_if<RequestError>(&item)) return *error;
  const Request& request = std::get<Request>(item);
  // A truncated prompt is shown as the model gets it: the kept tokens (their text without --ids).
  if (ids || request.sampling.truncate_prompt_tokens) {
    std::variant<PreparedRequest, RequestError> prepared = builder.build(request);
    if (auto* error = std::get_if<RequestError>(&prepared)) return std::move(*error);
    const PreparedRequest& built = std::get<PreparedRequest>(prepared);
    if (!ids) return json_quote(builder.text_of(built));
    return fmt::format("[{}]", fmt::join(built.prompt_ids, ","));
  }
  std::variant<std::string, RequestError> text = builder.prompt_text(request);
  if (auto* error = std::get_if<RequestError>(&text)) return std::move(*error);
  return json_quote(std::get<std::string>(text));
}

}  // namespace

RenderSummary render_prompts(std::istream& input, std::ostream& output, const PromptBuilder& builder,
                             const RenderSettings& settings) {
  RequestReader reader(input, SamplingParams{}, settings.format);
  RenderSummary summary;
  while (std::optional<RequestItem> item = reader.next()) {
    const std::variant<std::string, RequestError> prompt = prompt_json(*item, builder, settings.ids);
    if (const auto* error = std::get_if<RequestError>(&prompt)) {
      output << format_plain_line(*error) << '\n';
      ++summary.num_error_lines;
    } else {
      const Request& request = std::get<Request>(*item);
      output << fmt::format("{{\"id\":{},\"index\":{},\"prompt\":{}}}\n", request.id_json.value_or("null"),
                            request.index, std::get<std::string>(prompt));
    }
    ++summary.num_lines;
  }
  output.flush();
  if (!output) fail("cannot write the rendered prompts");
  return summary;
}

}  // namespace pagedgen
