// Fuzz target: the Jinja interpreter of chat templates. The input is a template text, then
// 0x1E, then the render's variables as a JSON object (messages, bos_token, ...; the seeds'
// conversation when absent). Parsing and rendering may end in text or a TemplateError (a
// template that does not parse, a raise_exception, a budget spent); any other exception, a
// crash or a hang is a finding. The budgets are smaller than the defaults so that a mutated
// loop stays fast.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_files.h"
#include "jinja/template.h"

using namespace pagedgen;

namespace {

constexpr std::string_view kConversation =
    R"({"messages": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"},)"
    R"( {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Bye"}],)"
    R"( "bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": true})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  const std::size_t separator = input.find('\x1e');
  const std::string_view source = input.substr(0, separator);
  const std::string_view variables = separator == std::string_view::npos ? kConversation : input.substr(separator + 1);
  jinja::RenderLimits limits;
  limits.max_steps = 200'000;
  limits.max_output_bytes = 1u << 20;
  try {
    const jinja::Template chat = jinja::Template::parse(source);
    (void)chat.render(variables,
                      std::chrono::year_month_day{std::chrono::year{2026}, std::chrono::December, std::chrono::day{6}},
                      limits);
  } catch (const jinja::TemplateError&) {
  }
  return 0;
}
