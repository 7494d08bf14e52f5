#include "model/layer_program.h"

#include <optional>

namespace pagedgen {

namespace {

// The post norm of a sub-block's output (kAttnPost or kFfnPost) where the model has them.
std::optional<NormWeight> post_norm(const ModelConfig& config, NormKind kind, int32_t layer) {
  if (!config.post_norms) return std::nullopt;
  return NormWeight{kind, layer};
}

// Layer l from its QKV projection to its MLP's output in delta.
void append_layer(const ModelConfig& config, int32_t l, std::vector<LayerOp>& ops) {
  const bool window = config.layer_has_window(l);
  const RopeTable rope = window && config.window_rope_differs() ? RopeTable::kWindow : RopeTable::kFull;
  ops.emplace_back(QkvProjection{l});
  ops.emplace_back(QkvRopeKvWrite{l, config.qkv_bias, config.qk_norm, rope});
  ops.emplace_back(Attention{l, window ? static_cast<int32_t>(*config.sliding_window) : 0,
                             config.attn_logit_softcap.value_or(0.0f), config.softmax_scale()});
  ops.emplace_back(OutputProjection{l});
  ops.emplace_back(ResidualNorm{true, post_norm(config, NormKind::kAttnPost, l), {NormKind::kFfn, l}, false});
  ops.emplace_back(GatedActivation{l, config.activation});
  ops.emplace_back(DownProjection{l});
}

}  // namespace

std::vector<LayerOp> layer_program(const ModelConfig& config) {
  const auto num_layers = static_cast<int32_t>(config.num_layers);
  std::vector<LayerOp> ops;
  ops.emplace_back(EmbedTokens{config.embedding_scale});
  ops.emplace_back(ResidualNorm{false, std::nullopt, {NormKind::kAttn, 0}, false});
  for (int32_t l = 0; l < num_layers; ++l) {
    append_layer(config, l, ops);
    const std::optional<NormWeight> ffn_post = post_norm(config, NormKind::kFfnPost, l);
    if (l + 1 < num_layers)
      ops.emplace_back(ResidualNorm{true, ffn_post, {NormKind::kAttn, l + 1}, false});
    else
      ops.emplace_back(ResidualNorm{true, ffn_post, {NormKind::kOutput, 0}, true});
  }
  ops.emplace_back(Logits{});
  if (config.final_logit_softcap) ops.emplace_back(SoftCapLogits{*config.final_logit_softcap});
  return ops;
}

}  // namespace pagedgen
