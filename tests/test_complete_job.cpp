// The complete job (job/complete_job.h) with the default model's tokenizer and a backend
// that runs no model (position_hash_backend.h), so every generated id is known in advance:
// the prompt's ids (BOS and text, or through the chat template), the pool it asks for, the
// greedy request it runs (ids, count, stats), and its refusals: an empty prompt, a prompt and
// max_tokens past the context, a pool too small for the prompt.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "job/complete_job.h"
#include "loader/model_files.h"
#include "model_chat_template.h"
#include "position_hash_backend.h"
#include "test_paths.h"
#include "util/error.h"

using namespace pagedgen;
using pagedgen::test::PositionHashBackend;

namespace {

// What the job must send for a plain prompt: BOS where the tokenizer adds one, then the text.
std::vector<TokenId> plain_ids(const Tokenizer& tokenizer, const std::string& prompt) {
  std::vector<TokenId> ids;
  if (tokenizer.special().add_bos && tokenizer.special().bos) ids.push_back(*tokenizer.special().bos);
  for (TokenId id : tokenizer.encode(prompt, false)) ids.push_back(id);
  return ids;
}

// The greedy chain the backend gives after `prompt`: each id from the one before and its position.
std::vector<TokenId> expected_ids(const std::vector<TokenId>& prompt, int32_t num_tokens) {
  std::vector<TokenId> ids;
  TokenId input = prompt.back();
  for (int32_t i = 0; i < num_tokens; ++i) {
    input = PositionHashBackend::next_token(input, static_cast<int32_t>(prompt.size()) - 1 + i);
    ids.push_back(input);
  }
  return ids;
}

}  // namespace

TEST_CASE("complete runs one greedy request in the pool it asks for") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const ModelFiles files(*test::default_model());
  const Tokenizer& tokenizer = files.tokenizer();
  const std::string prompt = "The capital of France is";
  const std::vector<TokenId> prompt_ids = plain_ids(tokenizer, prompt);

  const CompleteJob job({prompt, nullptr, 20, true}, tokenizer, files.config().context_length);
  // prompt + 20 tokens and the slot after the last, in blocks of 16.
  CHECK(job.num_pool_blocks() == static_cast<int32_t>((prompt_ids.size() + 20 + 16) / 16));
  PositionHashBackend backend;
  const CompleteResult result = job.run(backend, job.num_pool_blocks());
  CHECK(result.completion.num_tokens == 20);
  CHECK(result.completion.token_ids == expected_ids(prompt_ids, 20));
  CHECK(result.stats.num_prompt_tokens == std::ssize(prompt_ids));
  CHECK(result.stats.num_generated_tokens == 20);
  CHECK(result.stats.preemptions == 0);
  REQUIRE(!backend.sampled_params().empty());
  for (const SamplingParams& params : backend.sampled_params()) {
    CHECK(params.temperature == 0);
    CHECK(params.max_tokens == 20);
    CHECK(params.ignore_eos);
  }
}

TEST_CASE("complete sends a chat prompt through the template as one user message") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const ModelFiles files(*test::default_model());
  const Tokenizer& tokenizer = files.tokenizer();
  const ChatTemplate chat = test::model_chat_template(files.chat_template_text().value(), tokenizer);
  // SmolLM2's template adds its default system message before the user's.
  const std::string text = chat.render(user_message_request("Name three colors."));
  CHECK(text ==
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nName three colors.<|im_end|>\n<|im_start|>assistant\n");
  const std::vector<TokenId> prompt_ids = tokenizer.encode(text, true);

  const CompleteJob job({"Name three colors.", &chat, 4, true}, tokenizer, files.config().context_length);
  PositionHashBackend backend;
  const CompleteResult result = job.run(backend, job.num_pool_blocks());
  CHECK(result.stats.num_prompt_tokens == std::ssize(prompt_ids));
  CHECK(result.completion.token_ids == expected_ids(prompt_ids, 4));
}

TEST_CASE("complete refuses an empty prompt, a context overflow and a pool too small") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const ModelFiles files(*test::default_model());
  const Tokenizer& tokenizer = files.tokenizer();
  const int64_t context = files.config().context_length;
  REQUIRE_FALSE(tokenizer.special().add_bos);  // the default model's: an empty prompt has no token at all
  CHECK_THROWS_WITH_AS(CompleteJob({"", nullptr, 4}, tokenizer, context), "the prompt is empty", Error);
  const std::string prompt =
      "one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
      "fifteen sixteen seventeen eighteen nineteen twenty";
  const auto num_prompt = static_cast<int32_t>(plain_ids(tokenizer, prompt).size());
  REQUIRE(num_prompt > 16);
  try {
    CompleteJob({prompt, nullptr, static_cast<int32_t>(context) - num_prompt + 1}, tokenizer, context);
    FAIL("no SettingError");
  } catch (const SettingError& e) {
    CHECK(e.setting() == "max_tokens");
  }
  const CompleteJob fills({prompt, nullptr, static_cast<int32_t>(context) - num_prompt}, tokenizer, context);
  CHECK(fills.num_pool_blocks() == static_cast<int32_t>((context + 16) / 16));
  // One block of 16 cannot hold the prompt: the engine's error record, thrown with its code.
  const CompleteJob job({prompt, nullptr, 4}, tokenizer, context);
  PositionHashBackend backend;
  CHECK_THROWS_AS(job.run(backend, 1), Error);
}
