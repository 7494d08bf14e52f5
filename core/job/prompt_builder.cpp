#include "job/prompt_builder.h"

#include <fmt/format.h>

#include "sample/bad_words.h"
#include "util/error.h"

namespace pagedgen {

PromptBuilder::PromptBuilder(const Tokenizer& tokenizer, std::optional<ChatTemplate> chat_template,
                             std::string no_template_reason, int64_t max_model_len, UnsupportedSampling unsupported)
    : tokenizer_(tokenizer),
      chat_template_(std::move(chat_template)),
      no_template_reason_(std::move(no_template_reason)),
      max_model_len_(max_model_len),
      unsupported_(std::move(unsupported)) {}

std::variant<std::string, RequestError> PromptBuilder::prompt_text(const Request& request) const {
  if (const std::vector<TokenId>* ids = request.prompt_token_ids()) {
    if (std::optional<RequestError> refused = check_prompt_ids(request)) return *std::move(refused);
    return tokenizer_.decode(*ids, true);  // special tokens' text included, as for a template's prompt
  }
  if (!request.is_chat()) return request.prompt();
  auto error = [&](std::string code, std::string message) {
    return RequestError{request.index, request.id_json, std::move(code), std::move(message)};
  };
  if (!chat_template_) return error("chat_template_unavailable", no_template_reason_);
  try {
    return chat_template_->render(request.chat());
  } catch (const jinja::TemplateError& e) {
    // The message names the template's line ("line 3: ...").
    return error("chat_template_error", fmt::format("the chat template failed: {}", e.what()));
  } catch (const Error& e) {
    return error("invalid_messages", e.what());
  }
}

std::variant<PreparedRequest, RequestError> PromptBuilder::build(const Request& request) const {
  auto error = [&](std::string code, std::string message) {
    return RequestError{request.index, request.id_json, std::move(code), std::move(message)};
  };
  if (std::optional<RequestError> refused = check_sampling(request)) return *std::move(refused);
  const SamplingParams& sampling = request.sampling;
  PreparedRequest prepared;
  prepared.index = request.index;
  prepared.id_json = request.id_json;
  prepared.seed_key = request.seed_key;
  prepared.sampling = request.sampling;
  try {
    prepared.sampling.bad_words_ids = tokenize_bad_words(request.sampling.bad_words, tokenizer_);
  } catch (const Error& e) {
    return error("invalid_value", e.what());
  }
  if (const std::vector<TokenId>* ids = request.prompt_token_ids()) {
    if (std::optional<RequestError> refused = check_prompt_ids(request)) return *std::move(refused);
    prepared.prompt_ids = *ids;  // used as given: no BOS is added
    if (sampling.echo) prepared.echo_text = tokenizer_.decode(*ids, false);
  } else if (request.is_chat()) {
    std::variant<std::string, RequestError> text = prompt_text(request);
    if (auto* failed = std::get_if<RequestError>(&text)) return std::move(*failed);
    // The template writes BOS itself where the model uses one.
    prepared.prompt_ids = tokenizer_.encode(std::get<std::string>(text), true);
  } else {
    const SpecialTokens& special = tokenizer_.special();
    if (special.add_bos && special.bos) prepared.prompt_ids.push_back(*special.bos);
    const std::vector<TokenId> body = tokenizer_.encode(request.prompt(), false);
    prepared.prompt_ids.insert(prepared.prompt_ids.end(), body.begin(), body.end());
    if (sampling.echo) prepared.echo_text = request.prompt();
  }
  const std::size_t num_given = prepared.prompt_ids.size();
  truncate_prompt(prepared);
  // Echo repeats the prompt the model was given: the kept tokens once truncated.
  if (sampling.echo && prepared.prompt_ids.size() < num_given)
    prepared.echo_text = tokenizer_.decode(prepared.prompt_ids, false);
  const auto num_prompt = static_cast<int64_t>(prepared.prompt_ids.size());
  if (num_prompt == 0) return error("empty_prompt", "the prompt is empty: there is nothing to continue");
  if (num_prompt >= max_model_len_)
    return error("prompt_too_long",
                 fmt::format("the prompt has {} tokens; the model's context (max_model_len) is {} tokens, "
                             "which must hold the prompt and at least one generated token",
                             num_prompt, max_model_len_));
  return prepared;
}

std::optional<RequestError> PromptBuilder::check_sampling(const Request& request) const {
  auto error = [&](std::string code, std::string message) {
    return RequestError{request.index, request.id_json, std::move(code), std::move(message)};
  };
  const SamplingParams& sampling = request.sampling;
  if (unsupported_.token_masks && (sampling.response_format.is_constrained() || !sampling.allowed_token_ids.empty()))
    return error("unsupported_field", *unsupported_.token_masks);
  if (unsupported_.penalties && sampling.has_penalties()) return error("unsupported_field", *unsupported_.penalties);
  if (unsupported_.logprobs && (sampling.logprobs || sampling.prompt_logprobs))
    return error("unsupported_field", *unsupported_.logprobs);
  const auto outside_vocabulary = [&](std::string what) {
    return error("invalid_value", fmt::format("{} is not a token id of this model (its vocabulary has ids 0 to {})",
                                              what, tokenizer_.vocab_size() - 1));
  };
  for (const LogitBias& entry : sampling.logit_bias)
    if (entry.id >= tokenizer_.vocab_size()) return outside_vocabulary(fmt::format("logit_bias key \"{}\"", entry.id));
  for (std::size_t i = 0; i < sampling.allowed_token_ids.size(); ++i)
    if (sampling.allowed_token_ids[i] >= tokenizer_.vocab_size())
      return outside_vocabulary(fmt::format("allowed_token_ids[{}] ({})", i, sampling.allowed_token_ids[i]));
  return std::nullopt;
}

// vLLM's left truncation, over the whole prompt (BOS and chat template included): the last
// k tokens stay.
//
//   prompt  [ BOS  t1  t2  t3  t4  t5 ]   truncate_prompt_tokens 3 -> [ t3  t4  t5 ]
void PromptBuilder::truncate_prompt(PreparedRequest& prepared) const {
  const std::optional<int32_t> k = prepared.sampling.truncate_prompt_tokens;
  if (!k) return;
  const int64_t keep = *k == -1 ? max_model_len_ - 1 : *k;
  std::vector<TokenId>& ids = prepared.prompt_ids;
  if (static_cast<int64_t>(ids.size()) > keep) ids.erase(ids.begin(), ids.end() - keep);
}

std::optional<RequestError> PromptBuilder::check_prompt_ids(const Request& request) const {
  const std::vector<TokenId>& ids = *request.prompt_token_ids();
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= tokenizer_.vocab_size())
      return RequestError{request.index, request.id_json, "invalid_value",
                          fmt::format("prompt[{}] is {}, not a token id of this model (its vocabulary has ids 0 to {})",
                                      i, ids[i], tokenizer_.vocab_size() - 1)};
  return std::nullopt;
}

}  // namespace pagedgen
