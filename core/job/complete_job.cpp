#include "job/complete_job.h"

#include <utility>
#include <variant>
#include <vector>

#include "engine/engine.h"
#include "engine/run_to_completion.h"
#include "util/error.h"

namespace pagedgen {

namespace {

std::vector<TokenId> prompt_ids(const CompleteSettings& settings, const Tokenizer& tokenizer) {
  if (settings.chat_template) {
    return tokenizer.encode(settings.chat_template->render(user_message_request(settings.prompt)), true);
  }
  std::vector<TokenId> ids;
  if (tokenizer.special().add_bos && tokenizer.special().bos) ids.push_back(*tokenizer.special().bos);
  const auto body = tokenizer.encode(settings.prompt, false);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

}  // namespace

CompleteJob::CompleteJob(const CompleteSettings& settings, const Tokenizer& tokenizer, int64_t context_length)
    : tokenizer_(tokenizer), context_length_(context_length) {
  request_.prompt_ids = prompt_ids(settings, tokenizer);
  if (request_.prompt_ids.empty()) fail("the prompt is empty");
  if (std::ssize(request_.prompt_ids) + settings.max_tokens > context_length)
    fail_setting("max_tokens", "{} and the prompt's {} tokens exceed the model's context of {} tokens",
                 settings.max_tokens, request_.prompt_ids.size(), context_length);
  request_.sampling.temperature = 0;
  request_.sampling.max_tokens = settings.max_tokens;
  request_.sampling.ignore_eos = settings.ignore_eos;
}

int32_t CompleteJob::num_pool_blocks() const {
  const int64_t num_tokens = std::ssize(request_.prompt_ids) + request_.sampling.max_tokens;
  return static_cast<int32_t>((num_tokens + kBlockSize) / kBlockSize);  // + the next token's slot
}

CompleteResult CompleteJob::run(Backend& backend, int32_t num_blocks) const {
  EngineConfig config;
  config.block_size = kBlockSize;
  config.num_blocks = num_blocks;
  config.max_model_len = context_length_;
  Engine engine(config, backend, &tokenizer_);
  engine.add_requests({request_});
  std::vector<OutputRecord> records = run_to_completion(engine);
  PG_CHECK(records.size() == 1, "{} records for one request", records.size());
  if (const auto* error = std::get_if<RequestError>(&records.front())) fail("{}: {}", error->code, error->message);
  return {std::move(std::get<RequestOutput>(records.front()).choices.at(0)), engine.stats()};
}

}  // namespace pagedgen
