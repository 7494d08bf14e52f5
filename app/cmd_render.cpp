// `pagedgen render`: each input line's prompt as the model would see it, through the chat
// template generate would use (job/render_job.h), without loading the weights: a check of a
// template, its date and its kwargs before a long run.
#include <fmt/core.h>

#include <fstream>
#include <limits>
#include <memory>

#include "chat_template_option.h"
#include "command_help.h"
#include "commands.h"
#include "exit_codes.h"
#include "input_file.h"
#include "job/render_job.h"
#include "loader/model_vocabulary.h"
#include "model_option.h"
#include "util/error.h"

namespace pagedgen::app {

namespace {

struct RenderOptions {
  std::string model;
  ChatTemplateOptions chat;
  std::string input;
  std::string output = "-";
  bool ids = false;
};

int run_render(const RenderOptions& options) {
  InputFile input(options.input);
  const ModelVocabulary vocabulary(resolve_model_path(options.model));
  const ResolvedChatTemplate chat = resolve_chat_template(vocabulary, options.chat);
  // No context length without the weights' config: render never refuses a long prompt.
  const PromptBuilder builder(vocabulary.tokenizer(), chat.chat_template, chat.reason_if_none,
                              std::numeric_limits<int64_t>::max());
  std::ofstream file;
  if (options.output != "-") {
    file.open(options.output, std::ios::binary | std::ios::trunc);
    if (!file) fail("-o: cannot create '{}'", options.output);
  }
  std::ostream& output = options.output == "-" ? std::cout : file;
  const RenderSummary summary =
      render_prompts(input.stream(), output, builder, RenderSettings{std::nullopt, options.ids});
  return summary.num_error_lines > 0 ? kExitLinesFailed : kExitOk;
}

}  // namespace

void add_render_command(CLI::App& app, CommandRunner& selected) {
  auto options = std::make_shared<RenderOptions>();
  CLI::App* cmd = add_command(
      app, "render", "Print each input line's prompt as the model would see it, without running the model.",
      "Reads a generate input (plain or OpenAI batch lines) and writes one JSON line per non-blank input line, in "
      "order: {\"id\", \"index\", \"prompt\"} with the text of the prompt (a conversation through the chat template "
      "generate would use, special-token text included), or its token ids with --ids; a line that cannot be "
      "rendered gets its error record, as generate would write it. Loads only the tokenizer and the template.");
  add_model_option(*cmd, options->model);
  add_chat_template_options(*cmd, options->chat);
  cmd->add_option("-i,--input", options->input, "Input JSONL file; - reads standard input")->required();
  cmd->add_option("-o,--output", options->output, "Where the lines go; - (the default) is standard output");
  cmd->add_flag("--ids", options->ids, "Write the prompt's token ids (as generate decodes them) instead of its text");
  cmd->parse_complete_callback([&selected, options] { selected = [options] { return run_render(*options); }; });
}

}  // namespace pagedgen::app
