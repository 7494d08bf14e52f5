// The architectures beyond the Llama block (Qwen3, Phi-3, Gemma 2, Gemma 3) against
// llama.cpp on tiny random-weight GGUF files of each (scripts/make-arch-references.py,
// tests/data/arch-reference/<arch>): the tokenization, the logits at the last prompt
// position and 32 greedy tokens, on the dense reference and on the paged CPU backend (exact
// path; the fast path on the Q8_0 files), and a check that each feature of the file moves
// the logits (so none of them goes unchecked).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "cpu/cpu_backend.h"
#include "dense_forward.h"
#include "loader/model_files.h"
#include "model/model_weights.h"
#include "paged_batch_builder.h"
#include "reference_data.h"
#include "reference_engine.h"
#include "test_paths.h"

using namespace pagedgen;

namespace {

// As tests/test_e2e_reference.cpp: float32 on both sides, differences from summation order
// only (measured: Qwen3 7.6e-6, Phi-3 1.1e-5).
constexpr float kFloat32LogitTolerance = 2e-3f;
// Gemma's GeGLU: llama.cpp's CPU backend looks GELU up in a float16 table (the input and
// the result rounded to float16, ggml-cpu/vec.h GGML_GELU_FP16), pagedgen computes it in
// float32 as HF does. Measured: max |diff| 2.4e-3 (Gemma 2) and 3.1e-3 (Gemma 3); with
// llama.cpp's rounding copied into pagedgen's GELU (an experiment, not kept) 4.8e-6 and
// 9.4e-5, so the rest is summation order as above.
constexpr float kGemmaLogitTolerance = 6e-3f;

float logit_tolerance(const std::string& arch) {
  return arch.starts_with("gemma") ? kGemmaLogitTolerance : kFloat32LogitTolerance;
}
// A feature left out moves some logit by more than this, far beyond either tolerance
// (measured: 0.69, Gemma 3's local RoPE base, to 24, Phi-3's K and V rows swapped).
constexpr float kFeatureEffect = 0.1f;

const char* const kArchitectures[] = {"qwen3", "phi3", "gemma2", "gemma3"};

struct ArchFixture {
  std::string arch;
  std::vector<test::ReferencePrompt> prompts;
  ModelFiles files;
  // `name`: "qwen3", or "qwen3/q8_0" for the Q8_0 file.
  explicit ArchFixture(const std::string& name)
      : arch(name.substr(0, name.find('/'))),
        prompts(test::load_reference_prompts("arch-reference/" + name)),
        files(test::data_dir() / "arch-reference" / name / "model.gguf") {}
};

float max_abs_diff(std::span<const float> a, std::span<const float> b) {
  REQUIRE(a.size() == b.size());
  float worst = 0.0f;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

// The greedy tokens of every prompt in one engine run on the paged CPU backend.
std::vector<Completion> engine_greedy(const ArchFixture& f, const ModelWeights& weights, int32_t block_size,
                                      int32_t max_batch_tokens) {
  CpuBackend backend(f.files.config(), weights);
  return test::engine_greedy(backend, f.files.tokenizer(), f.prompts,
                             {block_size, max_batch_tokens, 256, f.files.config().context_length});
}

}  // namespace

TEST_CASE("each architecture's file reads as the architecture it is") {
  const ArchFixture qwen3("qwen3"), phi3("phi3"), gemma2("gemma2"), gemma3("gemma3");
  const ModelConfig& q = qwen3.files.config();
  CHECK((q.qk_norm && !q.post_norms && !q.sliding_window && q.rope_layout == RopeLayout::HalfSplit));
  CHECK((q.head_dim == 16 && q.num_heads * q.head_dim != q.hidden_size && q.tied_embeddings));
  const ModelConfig& p = phi3.files.config();
  CHECK((!p.qk_norm && !p.sliding_window && !p.tied_embeddings && p.rope_layout == RopeLayout::HalfSplit));
  CHECK(p.head_dim == 8);
  const ModelConfig& g2 = gemma2.files.config();
  CHECK((!g2.qk_norm && g2.post_norms && g2.activation == MlpActivation::kGeluTanh));
  CHECK(g2.embedding_scale == doctest::Approx(std::sqrt(32.0)));
  CHECK(g2.softmax_scale() == doctest::Approx(1.0 / std::sqrt(24.0)));
  CHECK((g2.attn_logit_softcap == 3.0f && g2.final_logit_softcap == 20.0f && g2.sliding_window == 6));
  CHECK(g2.window_layers == std::vector<bool>{true, false, true, false});
  CHECK(!g2.window_rope_differs());
  const ModelConfig& g3 = gemma3.files.config();
  CHECK((g3.qk_norm && g3.post_norms && !g3.attn_logit_softcap && !g3.final_logit_softcap));
  CHECK(g3.window_layers == std::vector<bool>{true, true, true, true, true, false});
  CHECK((g3.rope_theta == 1e6f && g3.window_rope_theta == 10000.0f && g3.window_rope_differs()));
}

TEST_CASE("the dense reference matches llama.cpp on each architecture's file") {
  for (const std::string arch : kArchitectures) {
    CAPTURE(arch);
    const ArchFixture f(arch);
    REQUIRE(f.prompts.size() == 5);
    const ModelWeights weights = f.files.load_weights();
    float worst = 0.0f;
    for (const test::ReferencePrompt& p : f.prompts) {
      CAPTURE(p.name);
      CHECK(f.files.tokenizer().encode(p.text, true) == p.prompt_ids);
      DenseForward dense(f.files.config(), weights, p.prompt_ids.size() + p.greedy_ids.size());
      const float diff = max_abs_diff(dense.forward(p.prompt_ids), p.logits);
      CHECK(diff < logit_tolerance(arch));
      worst = std::max(worst, diff);
      dense.reset();
      CHECK(greedy_decode(dense, p.prompt_ids, p.greedy_ids.size()) == p.greedy_ids);
    }
    MESSAGE(arch << ": largest |logit difference| from llama.cpp over " << f.prompts.size() << " prompts: " << worst
                 << " (tolerance " << logit_tolerance(arch) << ")");
  }
}

TEST_CASE("the paged CPU backend matches llama.cpp on each architecture's file, at every block size") {
  for (const std::string arch : kArchitectures) {
    CAPTURE(arch);
    const ArchFixture f(arch);
    const ModelWeights weights = f.files.load_weights();
    const auto vocab = static_cast<std::size_t>(f.files.config().vocab_size);
    // Last-token logits of each prompt, prefilled in chunks of 4 tokens (so a window of 6
    // spans chunks) on scrambled blocks of 3 slots.
    for (const test::ReferencePrompt& p : f.prompts) {
      CAPTURE(p.name);
      CpuBackend backend(f.files.config(), weights);
      backend.allocate_kv_pool(64, 3);
      test::PagedBatchBuilder builder(3, 64, 7);
      const std::size_t seq = builder.add_sequence();
      std::vector<float> logits(vocab);
      for (std::size_t start = 0; start < p.prompt_ids.size(); start += 4) {
        const std::size_t end = std::min(p.prompt_ids.size(), start + 4);
        const StepBatch batch = builder.step({{seq, {p.prompt_ids.begin() + start, p.prompt_ids.begin() + end}}});
        backend.forward(batch, logits);
      }
      CHECK(max_abs_diff(logits, p.logits) < logit_tolerance(arch));
    }
    // 32 greedy tokens of every prompt in one batched engine run, at several block sizes
    // and prefill chunk sizes.
    for (const auto& [block_size, max_batch_tokens] : {std::pair{1, 2048}, {4, 7}, {16, 2048}}) {
      CAPTURE(block_size);
      CAPTURE(max_batch_tokens);
      const std::vector<Completion> greedy = engine_greedy(f, weights, block_size, max_batch_tokens);
      for (std::size_t i = 0; i < f.prompts.size(); ++i) {
        CAPTURE(f.prompts[i].name);
        CHECK(greedy[i].token_ids == f.prompts[i].greedy_ids);
      }
    }
  }
}

TEST_CASE("each feature of the architectures' files moves the logits beyond the tolerance") {
  // Leaves one feature out of the config or the weights, and measures how far the dense
  // reference's logits of the longest prompt move from llama.cpp's.
  const auto effect = [](ArchFixture& f, const std::function<void(ModelConfig&, ModelWeights&)>& leave_out) {
    ModelConfig config = f.files.config();
    ModelWeights weights = f.files.load_weights();
    leave_out(config, weights);
    if (config.window_rope_differs() && weights.rope_inv_freq_window.empty())
      weights.rope_inv_freq_window = window_rope_inverse_frequencies(config);
    const test::ReferencePrompt& p =
        *std::ranges::max_element(f.prompts, {}, [](const test::ReferencePrompt& r) { return r.prompt_ids.size(); });
    DenseForward dense(config, weights, p.prompt_ids.size());
    return max_abs_diff(dense.forward(p.prompt_ids), p.logits);
  };
  const auto no_qk_norm = [](ModelConfig&, ModelWeights& w) {
    for (LayerWeights& l : w.layers) l.q_norm = l.k_norm = nullptr;
  };
  const auto no_post_norms = [](ModelConfig&, ModelWeights& w) {
    for (LayerWeights& l : w.layers) l.attn_post_norm = l.ffn_post_norm = nullptr;
  };
  const auto interleaved_rope = [](ModelConfig& c, ModelWeights&) { c.rope_layout = RopeLayout::Interleaved; };
  const auto silu = [](ModelConfig& c, ModelWeights&) { c.activation = MlpActivation::kSilu; };
  const auto no_embedding_scale = [](ModelConfig& c, ModelWeights&) { c.embedding_scale = 1.0f; };
  const auto no_window = [](ModelConfig& c, ModelWeights&) { c.sliding_window.reset(); };
  const auto one_rope_base = [](ModelConfig& c, ModelWeights&) { c.window_rope_theta = c.rope_theta; };
  const auto no_attn_softcap = [](ModelConfig& c, ModelWeights&) { c.attn_logit_softcap.reset(); };
  const auto no_final_softcap = [](ModelConfig& c, ModelWeights&) { c.final_logit_softcap.reset(); };
  const auto head_dim_scale = [](ModelConfig& c, ModelWeights&) {
    c.attention_scale = 1.0f / std::sqrt(static_cast<float>(c.hidden_size / c.num_heads));
  };
  // Phi-3's fused tensors: the gate and up halves swapped.
  const auto swapped_gate_up = [](ModelConfig&, ModelWeights& w) {
    for (LayerWeights& l : w.layers) std::swap(l.w_gate, l.w_up);
  };
  const auto swapped_k_v = [](ModelConfig&, ModelWeights& w) {
    for (LayerWeights& l : w.layers) std::swap(l.wk, l.wv);
  };

  ArchFixture qwen3("qwen3"), phi3("phi3"), gemma2("gemma2"), gemma3("gemma3");
  const std::pair<ArchFixture*, std::vector<std::pair<std::string, std::function<void(ModelConfig&, ModelWeights&)>>>>
      cases[] = {
          {&qwen3, {{"q/k norms", no_qk_norm}, {"half-split RoPE", interleaved_rope}}},
          {&phi3,
           {{"gate rows before up rows", swapped_gate_up},
            {"K rows before V rows", swapped_k_v},
            {"half-split RoPE", interleaved_rope}}},
          {&gemma2,
           {{"post norms", no_post_norms},
            {"GeGLU", silu},
            {"embedding scale", no_embedding_scale},
            {"sliding window", no_window},
            {"attention soft-cap", no_attn_softcap},
            {"final soft-cap", no_final_softcap},
            {"query scale", head_dim_scale}}},
          {&gemma3,
           {{"q/k norms", no_qk_norm},
            {"post norms", no_post_norms},
            {"sliding window", no_window},
            {"local RoPE base", one_rope_base},
            {"GeGLU", silu},
            {"query scale", head_dim_scale}}},
      };
  for (const auto& [fixture, features] : cases) {
    CAPTURE(fixture->arch);
    CHECK(effect(*fixture, [](ModelConfig&, ModelWeights&) {}) < logit_tolerance(fixture->arch));
    for (const auto& [feature, leave_out] : features) {
      CAPTURE(feature);
      const float moved = effect(*fixture, leave_out);
      MESSAGE(fixture->arch << " without " << feature << ": logits move by up to " << moved);
      CHECK(moved > kFeatureEffect);
    }
  }
}

TEST_CASE("the fast path (int8 activations, Q8_0 weights kept quantized) matches llama.cpp on each Q8_0 file") {
  // llama.cpp's run of the Q8_0 file as it is (arch-reference/<arch>/q8_0): both quantize
  // activations per 32 values the same way and sum the same integers. Measured: Qwen3 and
  // Phi-3 1.9e-6. On Gemma the float16 GELU table (see kGemmaLogitTolerance) moves some
  // MLP activations across an int8 rounding boundary: 0.24 (Gemma 2) and 0.24 (Gemma 3);
  // with llama.cpp's GELU rounding copied (the experiment above) 7.3e-3 and 1.9e-6.
  const auto fast_tolerance = [](const std::string& arch) { return arch.starts_with("gemma") ? 0.5f : 1e-3f; };
  // Greedy, each step fed llama.cpp's token: where its top two logits are this far apart
  // the fast path must choose the same.
  constexpr float kFastGreedyMargin = 0.2f;
  for (const std::string arch : kArchitectures) {
    CAPTURE(arch);
    const ArchFixture f(arch + "/q8_0");
    const ModelWeights weights = f.files.load_weights(WeightForm::kPackedWhereQuantized);
    REQUIRE(weights.layers.front().packed.w_down != nullptr);  // the int8 path, not float32
    const auto vocab = static_cast<std::size_t>(f.files.config().vocab_size);
    float worst = 0.0f;
    std::size_t num_steps = 0, num_equal = 0;
    for (const test::ReferencePrompt& p : f.prompts) {
      CAPTURE(p.name);
      CpuBackend backend(f.files.config(), weights, 2);  // float32 KV cache, as llama.cpp's run
      backend.allocate_kv_pool(64, 4);
      test::PagedBatchBuilder builder(4, 64, 11);
      const std::size_t seq = builder.add_sequence();
      std::vector<float> logits(vocab);
      backend.forward(builder.step({{seq, p.prompt_ids}}), logits);
      const float diff = max_abs_diff(logits, p.logits);
      CHECK(diff < fast_tolerance(arch));
      worst = std::max(worst, diff);
      const test::TeacherForcedGreedy g =
          test::teacher_forced_greedy(backend, builder, seq, p, logits, kFastGreedyMargin);
      num_steps += g.num_steps;
      num_equal += g.num_equal;
    }
    MESSAGE(arch << " fast path: largest |logit difference| from llama.cpp's Q8_0 run " << worst << " (tolerance "
                 << fast_tolerance(arch) << "), greedy tokens equal at " << num_equal << " of " << num_steps
                 << " steps");
  }
}
