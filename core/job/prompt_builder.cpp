#include "job/prompt_builder.h"

#include <fmt/format.h>

#include "util/error.h"

namespace pagedgen {

PromptBuilder::PromptBuilder(const Tokenizer& tokenizer, std::optional<ChatTemplate> chat_template,
                             std::string no_template_reason, int64_t max_model_len, UnsupportedSampling unsupported)
    : tokenizer_(tokenizer),
      chat_template_(std::move(chat_template)),
      no_template_reason_(std::move(no_template_reason)),
      max_model_len_(max_model_len),
      unsupported_(std::move(unsupported)) {}

std::variant<PreparedRequest, RequestError> PromptBuilder::build(const Request& request) const {
  auto error = [&](std::string code, std::string message) {
    return RequestError{request.index, request.id_json, std::move(code), std::move(message)};
  };
  const SamplingParams& sampling = request.sampling;
  if (unsupported_.token_masks && sampling.response_format.is_constrained())
    return error("unsupported_field", *unsupported_.token_masks);
  if (unsupported_.penalties && sampling.has_penalties()) return error("unsupported_field", *unsupported_.penalties);
  if (unsupported_.logprobs && (sampling.logprobs || sampling.prompt_logprobs))
    return error("unsupported_field", *unsupported_.logprobs);
  for (const LogitBias& entry : sampling.logit_bias)
    if (entry.id >= tokenizer_.vocab_size())
      return error("invalid_value", fmt::format("logit_bias key \"{}\" is not a token id of this model (its "
                                                "vocabulary has ids 0 to {})",
                                                entry.id, tokenizer_.vocab_size() - 1));
  PreparedRequest prepared;
  prepared.index = request.index;
  prepared.id_json = request.id_json;
  prepared.seed_key = request.seed_key;
  prepared.sampling = request.sampling;
  if (const std::vector<TokenId>* ids = request.prompt_token_ids()) {
    for (std::size_t i = 0; i < ids->size(); ++i)
      if ((*ids)[i] >= tokenizer_.vocab_size())
        return error("invalid_value", fmt::format("prompt[{}] is {}, not a token id of this model (its vocabulary has "
                                                  "ids 0 to {})",
                                                  i, (*ids)[i], tokenizer_.vocab_size() - 1));
    prepared.prompt_ids = *ids;  // used as given: no BOS is added
    if (sampling.echo) prepared.echo_text = tokenizer_.decode(*ids, false);
  } else if (request.is_chat()) {
    if (!chat_template_) return error("chat_template_unavailable", no_template_reason_);
    try {
      // The template writes BOS itself where the family uses one.
      prepared.prompt_ids = tokenizer_.encode(render_chat(*chat_template_, request.messages(), true), true);
    } catch (const Error& e) {
      return error("invalid_messages", e.what());
    }
  } else {
    const SpecialTokens& special = tokenizer_.special();
    if (special.add_bos && special.bos) prepared.prompt_ids.push_back(*special.bos);
    const std::vector<TokenId> body = tokenizer_.encode(request.prompt(), false);
    prepared.prompt_ids.insert(prepared.prompt_ids.end(), body.begin(), body.end());
    if (sampling.echo) prepared.echo_text = request.prompt();
  }
  const auto num_prompt = static_cast<int64_t>(prepared.prompt_ids.size());
  if (num_prompt == 0) return error("empty_prompt", "the prompt is empty: there is nothing to continue");
  if (num_prompt >= max_model_len_)
    return error("prompt_too_long",
                 fmt::format("the prompt has {} tokens; the model's context (max_model_len) is {} tokens, "
                             "which must hold the prompt and at least one generated token",
                             num_prompt, max_model_len_));
  return prepared;
}

}  // namespace pagedgen
