// `pagedgen complete`: one prompt, greedy, through the same engine as `generate` (one
// request, a KV pool just large enough for it). A quick check that a model loads and
// computes sensibly; batch work belongs to `generate`.
#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "backend_option.h"
#include "chat_template_option.h"
#include "command_help.h"
#include "commands.h"
#include "engine/engine.h"
#include "engine/run_to_completion.h"
#include "engine_options.h"
#include "exit_codes.h"
#include "loader/model_files.h"
#include "model_option.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace pagedgen::app {

namespace {

struct CompleteOptions {
  std::string model;
  std::string prompt;
  int32_t max_tokens = SamplingParams{}.max_tokens;
  bool chat = false;
  std::string chat_template;
  bool ignore_eos = false;
  BackendOptions backend;
};

constexpr int32_t kBlockSize = 16;

std::vector<TokenId> prompt_ids(const ModelVocabulary& vocabulary, const CompleteOptions& options) {
  const Tokenizer& tokenizer = vocabulary.tokenizer();
  if (!options.chat) {
    std::vector<TokenId> ids;
    if (tokenizer.special().add_bos && tokenizer.special().bos) ids.push_back(*tokenizer.special().bos);
    const auto body = tokenizer.encode(options.prompt, false);
    ids.insert(ids.end(), body.begin(), body.end());
    return ids;
  }
  const ResolvedChatTemplate resolved = resolve_chat_template(vocabulary, options.chat_template);
  if (!resolved.chat_template) fail("{}", resolved.reason_if_none);
  const ChatMessage messages[] = {{"user", options.prompt}};
  return tokenizer.encode(render_chat(*resolved.chat_template, messages, true), true);
}

int run_complete(const CompleteOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const ModelSource source = open_model_source(options.backend, options.model);
  const ModelVocabulary& vocabulary = source.vocabulary();
  PreparedRequest request;
  request.prompt_ids = prompt_ids(vocabulary, options);
  if (request.prompt_ids.empty()) fail("the prompt is empty");
  const int64_t num_tokens = std::ssize(request.prompt_ids) + options.max_tokens;
  if (num_tokens > source.config.context_length)
    fail("prompt ({} tokens) + --max-tokens {} exceeds the model's context of {} tokens", request.prompt_ids.size(),
         options.max_tokens, source.config.context_length);
  request.sampling.temperature = 0;
  request.sampling.max_tokens = options.max_tokens;
  request.sampling.ignore_eos = options.ignore_eos;

  EngineOptions engine_options;
  engine_options.num_blocks = static_cast<int32_t>((num_tokens + kBlockSize) / kBlockSize);  // + the next token's slot
  const ChosenBackend chosen = make_backend(options.backend, engine_options, source, kBlockSize, true);
  const auto t1 = Clock::now();
  Engine engine(make_engine_config(engine_options, kBlockSize, chosen.num_blocks, source.config.context_length),
                *chosen.backend, &vocabulary.tokenizer());
  engine.add_requests({std::move(request)});
  const std::vector<OutputRecord> records = run_to_completion(engine);
  PG_CHECK(records.size() == 1, "{} records for one request", records.size());
  if (const auto* error = std::get_if<RequestError>(&records.front())) fail("{}: {}", error->code, error->message);
  const Completion& completion = std::get<RequestOutput>(records.front()).choices.at(0);
  fmt::print("{}\n", completion.text);
  const EngineStats& stats = engine.stats();
  const auto seconds = [](auto d) { return std::chrono::duration<double>(d).count(); };
  fmt::print(stderr, "pagedgen: load {:.2f} s; prompt {} tokens in {:.2f} s; {} tokens generated in {:.2f} s ({:.1f} "
             "tokens/s)\n", seconds(t1 - t0), stats.num_prompt_tokens, stats.prefill_seconds, completion.num_tokens,
             stats.decode_seconds, static_cast<double>(completion.num_tokens) / std::max(1e-9, stats.decode_seconds));
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
  cmd->add_option("--max-tokens", options->max_tokens, "Tokens to generate, at most")->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--chat", options->chat, "Send PROMPT as a user message through the model's chat template");
  cmd->add_option("--chat-template", options->chat_template, chat_template_option_help());
  cmd->add_flag("--ignore-eos", options->ignore_eos, "Keep generating past end-of-generation tokens");
  add_backend_options(*cmd, options->backend);
  cmd->parse_complete_callback([&selected, options] { selected = [options] { return run_complete(*options); }; });
}

}  // namespace pagedgen::app
