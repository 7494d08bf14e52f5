// PromptBuilder on the default model's tokenizer: truncate_prompt_tokens keeps the last k
// prompt tokens (-1: max_model_len - 1; a longer k changes nothing), bad_words arrive
// tokenized, and the lines it turns into error records: an allowed_token_ids id outside
// the vocabulary, a bad word with no token, allowed_token_ids on a backend without masks.
#include <doctest/doctest.h>

#include <string>
#include <variant>
#include <vector>

#include "job/prompt_builder.h"
#include "loader/model_files.h"
#include "sample/bad_words.h"
#include "test_paths.h"

using namespace pagedgen;

namespace {

Request plain_request(const std::string& prompt) {
  Request request;
  request.index = 3;
  request.id_json = "\"r\"";
  request.input = prompt;
  return request;
}

std::vector<TokenId> prompt_ids(const PromptBuilder& builder, const Request& request) {
  const auto built = builder.build(request);
  REQUIRE(std::holds_alternative<PreparedRequest>(built));
  return std::get<PreparedRequest>(built).prompt_ids;
}

std::string build_error_of(const PromptBuilder& builder, const Request& request) {
  const auto built = builder.build(request);
  REQUIRE(std::holds_alternative<RequestError>(built));
  const RequestError& error = std::get<RequestError>(built);
  return error.code + ": " + error.message;
}

}  // namespace

TEST_CASE("truncate_prompt_tokens keeps the last k prompt tokens") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const ModelFiles files(*test::default_model());
  const Tokenizer& tokenizer = files.tokenizer();
  const PromptBuilder builder(tokenizer, std::nullopt, "none", 6);
  Request request = plain_request("The capital of France is a city");
  const std::vector<TokenId> whole = tokenizer.encode("The capital of France is a city", false);
  REQUIRE(whole.size() == 7);  // one more than the context holds with a generated token
  CHECK(build_error_of(builder, request).starts_with("prompt_too_long: the prompt has 7 tokens"));
  request.sampling.truncate_prompt_tokens = 2;
  CHECK(prompt_ids(builder, request) == std::vector<TokenId>(whole.end() - 2, whole.end()));
  request.sampling.truncate_prompt_tokens = -1;  // max_model_len - 1
  CHECK(prompt_ids(builder, request) == std::vector<TokenId>(whole.end() - 5, whole.end()));
  request.sampling.truncate_prompt_tokens = 7;  // the whole prompt: still too long
  CHECK(build_error_of(builder, request).starts_with("prompt_too_long: the prompt has 7 tokens"));
  Request shorter = plain_request("The capital");
  shorter.sampling.truncate_prompt_tokens = 4;  // longer than the prompt: nothing cut
  CHECK(prompt_ids(builder, shorter) == tokenizer.encode("The capital", false));
}

TEST_CASE("bad_words tokenized, token ids checked against the vocabulary, masks needed for allowed_token_ids") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const ModelFiles files(*test::default_model());
  const Tokenizer& tokenizer = files.tokenizer();
  const PromptBuilder builder(tokenizer, std::nullopt, "none", 64);
  Request request = plain_request("Hello");
  request.sampling.bad_words = {"Paris"};
  const auto built = builder.build(request);
  REQUIRE(std::holds_alternative<PreparedRequest>(built));
  CHECK(std::get<PreparedRequest>(built).sampling.bad_words_ids ==
        tokenize_bad_words(request.sampling.bad_words, tokenizer));
  request.sampling.bad_words = {"\n "};
  CHECK(build_error_of(builder, request) == "invalid_value: bad_words[0] gives no token (\"\n \"); remove it");
  request.sampling.bad_words.clear();
  request.sampling.allowed_token_ids = {5, tokenizer.vocab_size()};
  CHECK(build_error_of(builder, request) ==
        "invalid_value: allowed_token_ids[1] (49152) is not a token id of this model (its vocabulary has ids 0 to "
        "49151)");
  request.sampling.allowed_token_ids = {5};
  CHECK(prompt_ids(builder, request) == tokenizer.encode("Hello", false));
  UnsupportedSampling unsupported;
  unsupported.token_masks = "no masks";
  const PromptBuilder without_masks(tokenizer, std::nullopt, "none", 64, unsupported);
  CHECK(build_error_of(without_masks, request) == "unsupported_field: no masks");
}
