// The complete job (`pagedgen complete`): one prompt, greedy, through the same engine as
// `generate`, with a KV pool just large enough for it. A quick check that a model loads and
// computes sensibly; batch work belongs to the batch job.
//
//   CompleteJob job(settings, tokenizer, context_length);    // tokenizes, checks the context
//   ... build the backend with a pool of job.num_pool_blocks() blocks of kBlockSize ...
//   CompleteResult r = job.run(backend, num_blocks);
#pragma once

#include <cstdint>
#include <string>

#include "backend/backend.h"
#include "engine/engine_stats.h"
#include "engine/prepared_request.h"
#include "io/output_record.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace pagedgen {

struct CompleteSettings {
  std::string prompt;
  const ChatTemplate* chat_template = nullptr;  // set: the prompt goes in as a user message through it
  int32_t max_tokens = SamplingParams{}.max_tokens;
  bool ignore_eos = false;
};

struct CompleteResult {
  Completion completion;  // the one sample
  EngineStats stats;      // prompt tokens, prefill and decode time
};

class CompleteJob {
 public:
  static constexpr int32_t kBlockSize = 16;

  // Tokenizes the prompt (with the tokenizer's BOS, or through the chat template). Throws
  // Error when it is empty, SettingError (max_tokens) when it and max_tokens exceed the
  // model's `context_length`. `tokenizer` must outlive the job.
  CompleteJob(const CompleteSettings& settings, const Tokenizer& tokenizer, int64_t context_length);

  // The pool the request needs, in blocks of kBlockSize: its prompt, max_tokens and the
  // slot of the token after the last.
  int32_t num_pool_blocks() const;

  // Runs the request greedily on `backend` with a pool of `num_blocks` blocks of
  // kBlockSize. Throws Error with the engine's code and message when it fails.
  CompleteResult run(Backend& backend, int32_t num_blocks) const;

 private:
  const Tokenizer& tokenizer_;
  int64_t context_length_;
  PreparedRequest request_;
};

}  // namespace pagedgen
