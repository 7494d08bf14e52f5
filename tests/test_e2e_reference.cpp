// The CPU reference forward pass against llama.cpp (F32 weights, F32 KV cache) on the
// same weights: tokenization, logits at the last prompt position, 32 greedy tokens.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "backend/dense_forward.h"
#include "model/model_files.h"
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
  const ModelWeights weights = load_model_weights(files);
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
