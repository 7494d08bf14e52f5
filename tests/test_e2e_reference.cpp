// The CPU backend against llama.cpp on the same weights: the exact path and the dense
// reference against llama.cpp's F32 run (tokenization, logits at the last prompt position,
// 32 greedy tokens), the fast path against llama.cpp's run on the Q4_1 file as it is.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/cpu_backend.h"
#include "dense_forward.h"
#include "engine/engine.h"
#include "loader/model_files.h"
#include "model/model_weights.h"
#include "paged_batch_builder.h"
#include "reference_data.h"
#include "reference_engine.h"
#include "test_paths.h"

using namespace pagedgen;

namespace {

// Logits differ from llama.cpp's only by float32 summation order: measured max |diff|
// about 1e-4 on logits of magnitude ~20. A wrong RoPE pair layout, a transposed weight or
// a missing norm moves them by whole units, far beyond this.
constexpr float kLogitTolerance = 2e-3f;

// The fast path against llama.cpp's run of the Q4_1 file (both quantize activations per
// 32 values the same way and sum the same integers; float accumulation order differs). An
// activation value that lands near a rounding boundary can round to the neighbouring int8
// in one implementation and not the other, and over 30 layers such flips move logits by a
// few tenths: measured max |diff| 0.38-1.17 per prompt (mean 0.09-0.47). That is the size
// of the quantization noise itself: llama.cpp's own Q4_1 run differs from its F32 run by
// max 0.49-1.41 (mean 0.09-0.58), and the fast path from the F32 run by max 0.45-1.39.
constexpr float kFastLogitTolerance = 1.6f;  // against either llama.cpp run
// Greedy tokens, each step fed llama.cpp's token: where llama.cpp's top two logits are this
// far apart the fast path must choose the same; below it, either choice is within the
// noise above (measured: 400 of 416 equal, every difference at a margin under 0.28).
// Token-for-token equality of free-running greedy text is not a property even llama.cpp
// has: the same llama-cpp-python 0.3.36 built for AVX-512 (scripts/make-reference.py
// --quantized on an Intel Xeon, against the committed run from an AVX2 machine) gives
// logits up to 1.11 apart and the same free-running greedy tokens at 292 of 416 steps.
constexpr float kFastGreedyMargin = 0.5f;
constexpr double kFastGreedyAgreement = 0.95;

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
  const auto vocab = static_cast<std::size_t>(files.config().vocab_size);
  for (const test::ReferencePrompt& p : prompts) {
    CAPTURE(p.name);
    CHECK(tokenizer.encode(p.text, true) == p.prompt_ids);
    REQUIRE(!p.greedy_ids.empty());

    // One pass over the prompt and llama.cpp's greedy ids but the last, every row's logits:
    // the prompt's last row is compared with llama.cpp's logits, and row prompt + i - 1 must
    // choose greedy id i. Free-running greedy decoding gives llama.cpp's ids exactly when every
    // such choice agrees (the first disagreement is where the texts would part), and one pass
    // computes each position once where 32 decode steps read every weight 32 times.
    std::vector<TokenId> ids = p.prompt_ids;
    ids.insert(ids.end(), p.greedy_ids.begin(), p.greedy_ids.end() - 1);
    DenseForward dense(files.config(), weights, ids.size());
    const std::vector<float> rows = dense.forward(ids, true);
    REQUIRE(p.logits.size() == vocab);
    REQUIRE(rows.size() == ids.size() * vocab);
    const float* prompt_logits = rows.data() + (p.prompt_ids.size() - 1) * vocab;
    float max_diff = 0.0f;
    for (std::size_t i = 0; i < vocab; ++i) max_diff = std::max(max_diff, std::abs(prompt_logits[i] - p.logits[i]));
    CHECK(max_diff < kLogitTolerance);
    worst_diff = std::max(worst_diff, max_diff);

    std::vector<TokenId> greedy;
    for (std::size_t i = 0; i < p.greedy_ids.size(); ++i) {
      const float* row = prompt_logits + i * vocab;
      greedy.push_back(static_cast<TokenId>(std::max_element(row, row + vocab) - row));
    }
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
  const std::vector<Completion> greedy = test::engine_greedy(
      backend, tokenizer, prompts, {.num_blocks = 512, .max_model_len = files.config().context_length});
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    CAPTURE(prompts[i].name);
    CHECK(greedy[i].num_tokens == 32);
    IncrementalDecoder decoder(tokenizer, false, false);
    std::string expected;
    for (TokenId id : prompts[i].greedy_ids) expected += decoder.push(id);
    expected += decoder.finish();
    CHECK(greedy[i].text == expected);
  }
}

TEST_CASE("the fast path (int8 activations, weights kept quantized) matches llama.cpp on the Q4_1 file") {
  const auto model = test::default_model();
  if (!model) {
    MESSAGE("skipped: the default model is not installed (scripts/fetch-model.sh)");
    return;
  }
  const std::vector<test::ReferencePrompt> quantized = test::load_reference_prompts("reference-q4_1");
  const std::vector<test::ReferencePrompt> f32 = test::load_reference_prompts();
  REQUIRE(quantized.size() == f32.size());
  const ModelFiles files(*model);
  const ModelWeights weights = files.load_weights(WeightForm::kPackedWhereQuantized);
  const ModelConfig& config = files.config();
  const auto vocab = static_cast<std::size_t>(config.vocab_size);

  float worst_quantized = 0.0f, worst_f32 = 0.0f;
  std::size_t num_steps = 0, num_equal = 0;
  for (std::size_t i = 0; i < quantized.size(); ++i) {
    const test::ReferencePrompt& p = quantized[i];
    CAPTURE(p.name);
    REQUIRE(p.prompt_ids == f32[i].prompt_ids);
    // A float32 KV cache, as llama.cpp's runs had.
    CpuBackend backend(config, weights, 2);
    const std::size_t capacity = p.prompt_ids.size() + p.greedy_ids.size();
    backend.allocate_kv_pool(capacity / 16 + 2, 16);
    test::PagedBatchBuilder builder(16, static_cast<int32_t>(capacity / 16 + 2), 7);
    const std::size_t seq = builder.add_sequence();
    std::vector<float> logits(vocab);
    backend.forward(builder.step({{seq, p.prompt_ids}}), logits);
    float diff_quantized = 0.0f, diff_f32 = 0.0f;
    for (std::size_t v = 0; v < vocab; ++v) {
      diff_quantized = std::max(diff_quantized, std::abs(logits[v] - p.logits[v]));
      diff_f32 = std::max(diff_f32, std::abs(logits[v] - f32[i].logits[v]));
    }
    CHECK(diff_quantized < kFastLogitTolerance);
    CHECK(diff_f32 < kFastLogitTolerance);
    worst_quantized = std::max(worst_quantized, diff_quantized);
    worst_f32 = std::max(worst_f32, diff_f32);

    // Greedy (argmax, first on ties), each step fed llama.cpp's token so that one near-tie
    // does not change every later step.
    const test::TeacherForcedGreedy g =
        test::teacher_forced_greedy(backend, builder, seq, p, logits, kFastGreedyMargin);
    num_steps += g.num_steps;
    num_equal += g.num_equal;
  }
  CHECK(static_cast<double>(num_equal) >= kFastGreedyAgreement * static_cast<double>(num_steps));
  MESSAGE("fast path over " << quantized.size() << " prompts: greedy tokens equal to llama.cpp's on the Q4_1 file at "
                            << num_equal << " of " << num_steps << " steps; largest |logit difference| from that run "
                            << worst_quantized << ", from the F32 run " << worst_f32 << " (tolerance "
                            << kFastLogitTolerance << ")");
}
