#include "model/device_weight_layout.h"

#include <fmt/format.h>

#include <algorithm>

#include "model/model_weights.h"
#include "util/error.h"

namespace pagedgen {

namespace {

// `elements` rounded up to a whole number of 256-byte lines.
std::size_t aligned(std::size_t elements, std::size_t element_bytes) {
  const std::size_t per_line = 256 / element_bytes;
  return (elements + per_line - 1) / per_line * per_line;
}

}  // namespace

DeviceWeightLayout::DeviceWeightLayout(const ModelConfig& c, WeightDtype dtype) : dtype_(dtype) {
  const auto hidden = static_cast<uint64_t>(c.hidden_size);
  const auto q_dim = static_cast<uint64_t>(c.num_heads * c.head_dim);
  const auto kv_dim = static_cast<uint64_t>(c.num_kv_heads * c.head_dim);
  const auto ffn = static_cast<uint64_t>(c.intermediate_size);
  const auto vocab = static_cast<uint64_t>(c.vocab_size);
  const auto head_dim = static_cast<uint64_t>(c.head_dim);
  place({{"token_embd.weight", {vocab, hidden}}}, true);
  if (!c.tied_embeddings) place({{"output.weight", {vocab, hidden}}}, true);
  const auto num_pairs = static_cast<uint64_t>(c.rope_dim / 2);
  Parts globals = {{"output_norm.weight", {hidden}}, {std::string(kRopeInvFreq), {num_pairs}}};
  if (c.window_rope_differs()) globals.push_back({std::string(kWindowRopeInvFreq), {num_pairs}});
  place(globals, false);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    place({{p + "attn_q.weight", {q_dim, hidden}},
           {p + "attn_k.weight", {kv_dim, hidden}},
           {p + "attn_v.weight", {kv_dim, hidden}}},
          true);
    place({{p + "attn_output.weight", {hidden, q_dim}}}, true);
    place({{p + "ffn_gate.weight", {ffn, hidden}}, {p + "ffn_up.weight", {ffn, hidden}}}, true);
    place({{p + "ffn_down.weight", {hidden, ffn}}}, true);
    place({{p + "attn_norm.weight", {hidden}}, {p + "ffn_norm.weight", {hidden}}}, false);
    if (c.qkv_bias)
      place({{p + "attn_q.bias", {q_dim}}, {p + "attn_k.bias", {kv_dim}}, {p + "attn_v.bias", {kv_dim}}}, false);
    if (c.qk_norm) place({{p + "attn_q_norm.weight", {head_dim}}, {p + "attn_k_norm.weight", {head_dim}}}, false);
    if (c.post_norms)
      place({{p + "post_attention_norm.weight", {hidden}}, {p + "post_ffw_norm.weight", {hidden}}}, false);
  }
}

void DeviceWeightLayout::place(const Parts& parts, bool typed) {
  std::size_t& end = typed ? typed_elements_ : float_elements_;
  for (const auto& [name, shape] : parts) {
    std::size_t n = 1;
    for (uint64_t d : shape) n *= d;
    placements_.push_back({name, shape, typed, end, n});
    end += n;
  }
  end = aligned(end, typed ? weight_dtype_bytes(dtype_) : sizeof(float));
}

std::vector<ComputedWeights> DeviceWeightLayout::computed(const ModelConfig& config, const float* freq_divisors) const {
  std::vector<ComputedWeights> out{{&at(kRopeInvFreq), rope_inverse_frequencies(config, freq_divisors)}};
  if (config.window_rope_differs()) out.push_back({&at(kWindowRopeInvFreq), window_rope_inverse_frequencies(config)});
  return out;
}

const WeightPlacement& DeviceWeightLayout::at(std::string_view name) const {
  const auto it = std::ranges::find(placements_, name, &WeightPlacement::name);
  PG_CHECK(it != placements_.end(), "the device weight layout places no tensor '{}'", name);
  return *it;
}

}  // namespace pagedgen
