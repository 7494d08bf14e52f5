// `pagedgen complete`: one prompt, greedy, on the dense reference forward pass. A quick
// check that a model loads and computes sensibly; batch work belongs to `generate`.
#include <fmt/ranges.h>
#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "backend/dense_forward.h"
#include "chat_template_option.h"
#include "commands.h"
#include "exit_codes.h"
#include "model/model_files.h"
#include "model/model_weights.h"
#include "model_option.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace pagedgen::app {

namespace {

struct CompleteOptions {
  std::string model;
  std::string prompt;
  std::size_t max_tokens = 32;
  bool chat = false;
  std::string chat_template;
  bool ignore_eos = false;
};

std::vector<TokenId> prompt_ids(const ModelFiles& files, const CompleteOptions& options) {
  const Tokenizer& tokenizer = files.tokenizer();
  if (!options.chat) {
    std::vector<TokenId> ids;
    if (tokenizer.special().add_bos && tokenizer.special().bos) ids.push_back(*tokenizer.special().bos);
    const auto body = tokenizer.encode(options.prompt, false);
    ids.insert(ids.end(), body.begin(), body.end());
    return ids;
  }
  const ResolvedChatTemplate resolved = resolve_chat_template(files, options.chat_template);
  if (!resolved.chat_template) fail("{}", resolved.reason_if_none);
  const ChatMessage messages[] = {{"user", options.prompt}};
  return tokenizer.encode(render_chat(*resolved.chat_template, messages, true), true);
}

int run_complete(const CompleteOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const ModelFiles files(resolve_model_path(options.model));
  const ModelWeights weights = load_model_weights(files);
  const auto t1 = Clock::now();
  const ModelConfig& config = files.config();
  const Tokenizer& tokenizer = files.tokenizer();

  const std::vector<TokenId> prompt = prompt_ids(files, options);
  if (prompt.empty()) fail("the prompt is empty");
  const std::size_t capacity = prompt.size() + options.max_tokens;
  if (capacity > static_cast<std::size_t>(config.context_length))
    fail("prompt ({} tokens) + --max-tokens {} exceeds the model's context of {} tokens", prompt.size(),
         options.max_tokens, config.context_length);
  DenseForward model(config, weights, capacity);

  IncrementalDecoder decoder(tokenizer, false, false);
  std::vector<float> logits = model.forward(prompt);
  const auto t2 = Clock::now();
  std::size_t generated = 0;
  while (generated < options.max_tokens) {
    const auto next = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (!options.ignore_eos && tokenizer.is_end_of_generation(next)) break;
    ++generated;
    fmt::print("{}", decoder.push(next));
    std::fflush(stdout);
    if (generated == options.max_tokens) break;
    const TokenId step[] = {next};
    logits = model.forward(step);
  }
  fmt::print("{}\n", decoder.finish());
  const auto t3 = Clock::now();
  const auto seconds = [](auto d) { return std::chrono::duration<double>(d).count(); };
  fmt::print(stderr, "pagedgen: load {:.2f} s; prompt {} tokens in {:.2f} s; {} tokens generated in {:.2f} s ({:.1f} tokens/s)\n",
             seconds(t1 - t0), prompt.size(), seconds(t2 - t1), generated, seconds(t3 - t2),
             generated / std::max(1e-9, seconds(t3 - t2)));
  return kExitOk;
}

}  // namespace

void add_complete_command(CLI::App& app, CommandRunner& selected) {
  auto options = std::make_shared<CompleteOptions>();
  CLI::App* cmd = app.add_subcommand(
      "complete", "Greedily continue one PROMPT on the CPU reference path (dense KV cache) and print the text.");
  add_model_option(*cmd, options->model);
  cmd->add_option("prompt", options->prompt, "The prompt text")->required();
  cmd->add_option("-n,--max-tokens", options->max_tokens, "Tokens to generate")->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--chat", options->chat, "Send PROMPT as a user message through the model's chat template");
  cmd->add_option("--chat-template", options->chat_template, chat_template_option_help());
  cmd->add_flag("--ignore-eos", options->ignore_eos, "Keep generating past end-of-generation tokens");
  cmd->parse_complete_callback([&selected, options] { selected = [options] { return run_complete(*options); }; });
}

}  // namespace pagedgen::app
