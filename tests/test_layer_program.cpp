// The layer program (model/layer_program.h): the ops of the Llama block and of the extras
// architectures add, in order, written out as text; and an architecture that only
// recombines existing features (Llama with Gemma's post norms, built here and nowhere else)
// runs on the CPU backend, through the program alone, as the dense reference computes it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <variant>
#include <vector>

#include "cpu/cpu_backend.h"
#include "dense_forward.h"
#include "model/dummy_weights.h"
#include "model/layer_program.h"
#include "paged_batch_builder.h"

using namespace pagedgen;

namespace {

std::string norm_name(NormWeight norm) {
  switch (norm.kind) {
    case NormKind::kAttn:
      return "attn" + std::to_string(norm.layer);
    case NormKind::kAttnPost:
      return "attn_post" + std::to_string(norm.layer);
    case NormKind::kFfn:
      return "ffn" + std::to_string(norm.layer);
    case NormKind::kFfnPost:
      return "ffn_post" + std::to_string(norm.layer);
    case NormKind::kOutput:
      return "output";
  }
  return "?";
}

struct OpText {
  std::string operator()(const EmbedTokens& op) const { return op.scale != 1.0f ? "embed*scale" : "embed"; }
  std::string operator()(const ResidualNorm& op) const {
    std::string s = "norm(";
    if (op.add_delta) s += op.delta_norm ? "+" + norm_name(*op.delta_norm) + " " : "+delta ";
    return s + "-> " + norm_name(op.norm) + (op.logits_rows ? " logits rows)" : ")");
  }
  std::string operator()(const QkvProjection& op) const { return "qkv" + std::to_string(op.layer); }
  std::string operator()(const QkvRopeKvWrite& op) const {
    return std::string("rope") + (op.bias ? "+bias" : "") + (op.qk_norm ? "+qk_norm" : "") +
           (op.rope == RopeTable::kWindow ? "/window" : "");
  }
  std::string operator()(const Attention& op) const {
    return "attn" + (op.window > 0 ? "/w" + std::to_string(op.window) : std::string()) + (op.softcap > 0 ? "/cap" : "");
  }
  std::string operator()(const OutputProjection&) const { return "wo"; }
  std::string operator()(const GatedActivation& op) const {
    return op.activation == MlpActivation::kSilu ? "silu" : "gelu";
  }
  std::string operator()(const DownProjection&) const { return "down"; }
  std::string operator()(const Logits&) const { return "logits"; }
  std::string operator()(const SoftCapLogits&) const { return "softcap"; }
};

// The program as one line of op names, separated by " | ".
std::string program_text(const ModelConfig& config) {
  std::string text;
  for (const LayerOp& op : layer_program(config)) text += (text.empty() ? "" : " | ") + std::visit(OpText{}, op);
  return text;
}

ModelConfig tiny_llama() {
  ModelConfig c;
  c.architecture = "llama";
  c.num_layers = 2;
  c.hidden_size = 64;
  c.intermediate_size = 96;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.rope_dim = 16;
  c.vocab_size = 128;
  c.context_length = 64;
  c.rms_norm_eps = 1e-6f;
  return c;
}

// A made-up architecture: the Llama block with Gemma's post norms.
ModelConfig tiny_llama_post_norms() {
  ModelConfig c = tiny_llama();
  c.architecture = "llama-post-norms";
  c.post_norms = true;
  return c;
}

}  // namespace

TEST_CASE("the Llama block's program: embed, per layer attention then MLP, the head") {
  CHECK(program_text(tiny_llama()) ==
        "embed | norm(-> attn0) | "
        "qkv0 | rope | attn | wo | norm(+delta -> ffn0) | silu | down | norm(+delta -> attn1) | "
        "qkv1 | rope | attn | wo | norm(+delta -> ffn1) | silu | down | norm(+delta -> output logits rows) | "
        "logits");
}

TEST_CASE("the extras in the program: bias, q/k norms, post norms, windows and their RoPE, caps, scale, GeGLU") {
  ModelConfig c = tiny_llama();
  c.qkv_bias = true;
  c.qk_norm = true;
  c.post_norms = true;
  c.embedding_scale = 8.0f;
  c.activation = MlpActivation::kGeluTanh;
  c.attn_logit_softcap = 50.0f;
  c.final_logit_softcap = 30.0f;
  c.sliding_window = 8;
  c.window_layers = {true, false};
  c.window_rope_theta = 5000.0f;
  CHECK(program_text(c) ==
        "embed*scale | norm(-> attn0) | "
        "qkv0 | rope+bias+qk_norm/window | attn/w8/cap | wo | norm(+attn_post0 -> ffn0) | gelu | down | "
        "norm(+ffn_post0 -> attn1) | "
        "qkv1 | rope+bias+qk_norm | attn/cap | wo | norm(+attn_post1 -> ffn1) | gelu | down | "
        "norm(+ffn_post1 -> output logits rows) | logits | softcap");
  // The window layers rotate with their own table only when it differs.
  c.window_rope_theta = c.rope_theta;
  CHECK(program_text(c).find("/window") == std::string::npos);
}

TEST_CASE("a recombined architecture (Llama with Gemma's post norms) on the CPU backend follows the dense reference") {
  const ModelConfig config = tiny_llama_post_norms();
  const ModelWeights weights = make_dummy_weights(config, 11);
  REQUIRE(weights.layers[1].ffn_post_norm != nullptr);
  const auto vocab = static_cast<std::size_t>(config.vocab_size);
  CpuBackend backend(config, weights, 2);
  backend.allocate_kv_pool(16, 4);
  test::PagedBatchBuilder builder(4, 16, 3);
  const std::size_t seq = builder.add_sequence();
  DenseForward dense(config, weights, 24);
  // A prompt in chunks of 7 and 4, then decode steps fed the reference's greedy tokens.
  std::vector<std::vector<int32_t>> steps = {{5, 17, 99, 3, 42, 64, 8}, {120, 1, 77, 31}};
  double max_diff = 0.0;
  for (std::size_t i = 0; i < 8; ++i) {
    CAPTURE(i);
    const StepBatch batch = builder.step({{seq, steps[i]}});
    std::vector<float> logits(vocab);
    backend.forward(batch, logits);
    const std::vector<float> reference = dense.forward(steps[i]);
    REQUIRE(reference.size() == vocab);
    for (std::size_t t = 0; t < vocab; ++t) max_diff = std::max(max_diff, std::abs(double{logits[t]} - reference[t]));
    const auto best = std::max_element(reference.begin(), reference.end()) - reference.begin();
    steps.push_back({static_cast<int32_t>(best)});
  }
  MESSAGE("max |paged - dense| over 8 steps' logits: " << max_diff << " (tolerance 1e-4)");
  CHECK(max_diff <= 1e-4);
}
