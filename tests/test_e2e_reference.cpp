// The CPU reference forward pass against llama.cpp (F32 weights, F32 KV cache) on the
// same weights: tokenization, logits at the last prompt position, 32 greedy tokens.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu_backend.h"
#include "backend/dense_forward.h"
#include "engine/engine.h"
#include "loader/model_files.h"
#include "model/model_weights.h"
#include "reference_data.h"
#include "test_paths.h"

using namespace pagedgen;

namespace {

// Logits differ from llama.cpp's only by float32 summation order: measured max |diff|
// about 1e-4 on logits of magnitude ~20. A wrong RoPE pair layout, a transposed weight or
// a missing norm moves them by whole units, far beyond this.
constexpr float kLogitTolerance = 2e-3f;

}  // namespace

TEST_CASE("dense forward pass matches llama.cpp on the reference prompts") {
  const auto model = test::default_model();
  if (!model) {
    MESSAGE("skipped: the default model is not installed (scripts/fetch-model.sh)");
    return;
  }
  const std::vector<test::ReferencePrompt> prompts = test::load_reference_prompts();
  REQUIRE(prompts.size() >= 10);
  const ModelFiles files(*model);
  const ModelWeights weights = files.load_weights();
  const Tokenizer& tokenizer = files.tokenizer();

  float worst_diff = 0.0f;
  for (const test::ReferencePrompt& p : prompts) {
    CAPTURE(p.name);
    CHECK(tokenizer.encode(p.text, true) == p.prompt_ids);

    DenseForward dense(files.config(), weights, p.prompt_ids.size() + p.greedy_ids.size());
    const std::vector<float> logits = dense.forward(p.prompt_ids);
    REQUIRE(logits.size() == p.logits.size());
    float max_diff = 0.0f;
    for (std::size_t i = 0; i < logits.size(); ++i) max_diff = std::max(max_diff, std::abs(logits[i] - p.logits[i]));
    CHECK(max_diff < kLogitTolerance);
    worst_diff = std::max(worst_diff, max_diff);

    dense.reset();
    const std::vector<TokenId> greedy = greedy_decode(dense, p.prompt_ids, p.greedy_ids.size());
    CHECK(greedy == p.greedy_ids);
    if (p.text == "The capital of France is") {
      const std::string continuation = tokenizer.decode(greedy, false);
      MESSAGE("\"The capital of France is\" continues greedily with: \"" << continuation << "\"");
      CHECK(continuation.rfind(" Paris", 0) == 0);
    }
  }
  MESSAGE("largest |logit difference| from llama.cpp over " << prompts.size() << " prompts: " << worst_diff
                                                            << " (tolerance " << kLogitTolerance << ")");
}

TEST_CASE("the paged engine's greedy output equals the reference's token for token") {
  const auto model = test::default_model();
  if (!model) {
    MESSAGE("skipped: the default model is not installed (scripts/fetch-model.sh)");
    return;
  }
  const std::vector<test::ReferencePrompt> prompts = test::load_reference_prompts();
  const ModelFiles files(*model);
  const ModelWeights weights = files.load_weights();
  const Tokenizer& tokenizer = files.tokenizer();
  CpuBackend backend(files.config(), weights);

  // All prompts in one run: batched, sharing prefixes, at block size 16. The reference's
  // 32 greedy ids (equal to the dense pass's, checked above) decode to the expected text.
  std::vector<PreparedRequest> requests;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    PreparedRequest r;
    r.index = i;
    r.seed_key = prompts[i].name;
    r.prompt_ids = prompts[i].prompt_ids;
    r.sampling.temperature = 0;
    r.sampling.max_tokens = static_cast<int32_t>(prompts[i].greedy_ids.size());
    r.sampling.ignore_eos = true;
    requests.push_back(r);
  }
  EngineConfig config;
  config.num_blocks = 512;
  config.max_model_len = files.config().context_length;
  Engine engine(config, backend, &tokenizer);
  std::vector<std::optional<std::string>> texts(prompts.size());
  engine.add_requests(requests);
  while (engine.has_unfinished()) {
    for (const OutputRecord& record : engine.step().finished) {
      REQUIRE(std::holds_alternative<RequestOutput>(record));
      const auto& output = std::get<RequestOutput>(record);
      REQUIRE(output.choices.size() == 1);
      CHECK(output.choices[0].num_tokens == 32);
      texts[output.index] = output.choices[0].text;
    }
  }
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    CAPTURE(prompts[i].name);
    REQUIRE(texts[i].has_value());
    IncrementalDecoder decoder(tokenizer, false, false);
    std::string expected;
    for (TokenId id : prompts[i].greedy_ids) expected += decoder.push(id);
    expected += decoder.finish();
    CHECK(*texts[i] == expected);
  }
}
