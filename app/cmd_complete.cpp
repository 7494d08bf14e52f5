// `pagedgen complete`: one prompt, greedy, through the same engine as `generate` (the
// complete job, job/complete_job.h). Parses the flags, loads the model with the pool the job
// asks for, runs it and prints the text, then the timings on stderr.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include "backend_option.h"
#include "chat_template_option.h"
#include "command_help.h"
#include "commands.h"
#include "engine_options.h"
#include "exit_codes.h"
#include "job/complete_job.h"
#include "loader/model_files.h"
#include "model_option.h"
#include "util/error.h"

namespace pagedgen::app {

namespace {

struct CompleteOptions {
  std::string model;
  std::string prompt;
  int32_t max_tokens = SamplingParams{}.max_tokens;
  bool chat = false;
  ChatTemplateOptions chat_template;
  bool ignore_eos = false;
  BackendOptions backend;
};

int run_complete(const CompleteOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const ModelSource source = open_model_source(options.backend, options.model);
  const ModelVocabulary& vocabulary = source.vocabulary();
  std::optional<ResolvedChatTemplate> chat;
  if (options.chat) {
    chat = resolve_chat_template(vocabulary, options.chat_template);
    if (!chat->chat_template) fail("{}", chat->reason_if_none);
  }
  const CompleteSettings settings{options.prompt, chat ? &*chat->chat_template : nullptr, options.max_tokens,
                                  options.ignore_eos};
  const CompleteJob job(settings, vocabulary.tokenizer(), source.config.context_length);
  EngineOptions engine_options;
  engine_options.num_blocks = job.num_pool_blocks();
  const ChosenBackend chosen = make_backend(options.backend, engine_options, source, CompleteJob::kBlockSize, true);
  const auto t1 = Clock::now();
  const CompleteResult result = job.run(*chosen.backend, chosen.num_blocks);
  fmt::print("{}\n", result.completion.text);
  const auto seconds = [](auto d) { return std::chrono::duration<double>(d).count(); };
  fmt::print(stderr,
             "pagedgen: load {:.2f} s; prompt {} tokens in {:.2f} s; {} tokens generated in {:.2f} s ({:.1f} "
             "tokens/s)\n",
             seconds(t1 - t0), result.stats.num_prompt_tokens, result.stats.prefill_seconds,
             result.completion.num_tokens, result.stats.decode_seconds,
             static_cast<double>(result.completion.num_tokens) / std::max(1e-9, result.stats.decode_seconds));
  return kExitOk;
}

}  // namespace

void add_complete_command(CLI::App& app, CommandRunner& selected) {
  auto options = std::make_shared<CompleteOptions>();
  CLI::App* cmd = add_command(
      app, "complete", "Greedily continue one PROMPT and print the text.",
      "Runs the prompt through the same engine as generate (one request, a KV pool just large enough for it): a "
      "quick check that a model loads and computes sensibly. Batch work belongs to generate.");
  add_model_option(*cmd, options->model);
  cmd->add_option("prompt", options->prompt, "The prompt text")->required();
  cmd->add_option("--max-tokens", options->max_tokens, "Tokens to generate, at most")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--chat", options->chat, "Send PROMPT as a user message through the model's chat template");
  add_chat_template_options(*cmd, options->chat_template);
  cmd->add_flag("--ignore-eos", options->ignore_eos, "Keep generating past end-of-generation tokens");
  add_backend_options(*cmd, options->backend);
  cmd->parse_complete_callback([&selected, options] { selected = [options] { return run_complete(*options); }; });
}

}  // namespace pagedgen::app
