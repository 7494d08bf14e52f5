#include "model/dummy_weights.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "model/dummy_values.h"
#include "util/error.h"

namespace pagedgen {

uint64_t DummyTensor::num_elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

std::vector<DummyTensor> dummy_tensors(const ModelConfig& c) {
  const auto hidden = static_cast<uint64_t>(c.hidden_size);
  const auto q_dim = static_cast<uint64_t>(c.num_heads * c.head_dim);
  const auto kv_dim = static_cast<uint64_t>(c.num_kv_heads * c.head_dim);
  const auto ffn = static_cast<uint64_t>(c.intermediate_size);
  const auto vocab = static_cast<uint64_t>(c.vocab_size);
  auto matrix = [](std::string name, uint64_t rows, uint64_t cols) {
    return DummyTensor{std::move(name), {rows, cols}, false, 1.0f / std::sqrt(static_cast<float>(cols))};
  };
  auto ones = [](std::string name, uint64_t n) { return DummyTensor{std::move(name), {n}, true, 0.0f}; };
  auto bias = [](std::string name, uint64_t n) { return DummyTensor{std::move(name), {n}, false, 0.02f}; };
  // The norms beyond the Llama block get values other than ones, so that a weight read at the
  // wrong index shows.
  auto extra_norm = [](std::string name, uint64_t n) { return DummyTensor{std::move(name), {n}, false, 1.0f}; };
  const auto head_dim = static_cast<uint64_t>(c.head_dim);

  std::vector<DummyTensor> t;
  // Embedding rows of unit scale: the first norm sees activations of a real model's size.
  t.push_back(DummyTensor{"token_embd.weight", {vocab, hidden}, false, 1.0f});
  t.push_back(ones("output_norm.weight", hidden));
  if (!c.tied_embeddings) t.push_back(matrix("output.weight", vocab, hidden));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    t.push_back(ones(p + "attn_norm.weight", hidden));
    t.push_back(matrix(p + "attn_q.weight", q_dim, hidden));
    t.push_back(matrix(p + "attn_k.weight", kv_dim, hidden));
    t.push_back(matrix(p + "attn_v.weight", kv_dim, hidden));
    if (c.qkv_bias) {
      t.push_back(bias(p + "attn_q.bias", q_dim));
      t.push_back(bias(p + "attn_k.bias", kv_dim));
      t.push_back(bias(p + "attn_v.bias", kv_dim));
    }
    if (c.qk_norm) {
      t.push_back(extra_norm(p + "attn_q_norm.weight", head_dim));
      t.push_back(extra_norm(p + "attn_k_norm.weight", head_dim));
    }
    t.push_back(matrix(p + "attn_output.weight", hidden, q_dim));
    if (c.post_norms) t.push_back(extra_norm(p + "post_attention_norm.weight", hidden));
    t.push_back(ones(p + "ffn_norm.weight", hidden));
    t.push_back(matrix(p + "ffn_gate.weight", ffn, hidden));
    t.push_back(matrix(p + "ffn_up.weight", ffn, hidden));
    t.push_back(matrix(p + "ffn_down.weight", hidden, ffn));
    if (c.post_norms) t.push_back(extra_norm(p + "post_ffw_norm.weight", hidden));
  }
  return t;
}

ModelConfig dummy_model_config(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::path file = std::filesystem::is_directory(path, ec) ? path / "config.json" : path;
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("a dummy model needs an HF config.json (or a directory holding one); cannot read '{}'", file.string());
  std::ostringstream text;
  text << in.rdbuf();
  ModelConfig config = model_config_from_hf_json(text.str(), file);
  if (config.name.empty()) config.name = "dummy " + file.string();
  return config;
}

ModelWeights make_dummy_weights(const ModelConfig& config, uint64_t seed, const StopToken& stop) {
  ModelWeights w;
  std::map<std::string, const float*> by_name;
  const std::vector<DummyTensor> tensors = dummy_tensors(config);
  for (std::size_t id = 0; id < tensors.size(); ++id) {
    stop.throw_if_stopped();
    const DummyTensor& t = tensors[id];
    const uint64_t n = t.num_elements();
    auto data = std::make_unique<float[]>(n);
    for (uint64_t i = 0; i < n; ++i) data[i] = t.ones ? 1.0f : dummy_value(seed, static_cast<uint32_t>(id), i, t.scale);
    by_name[t.name] = data.get();
    w.storage.push_back(std::move(data));
    w.num_parameters += n;
  }
  auto get = [&](const std::string& name) { return by_name.at(name); };
  auto find = [&](const std::string& name) -> const float* {
    const auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : it->second;
  };
  w.token_embd = get("token_embd.weight");
  w.output_norm = get("output_norm.weight");
  w.output = config.tied_embeddings ? w.token_embd : get("output.weight");
  for (int64_t i = 0; i < config.num_layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    LayerWeights& l = w.layers.emplace_back();
    l.attn_norm = get(p + "attn_norm.weight");
    l.wq = get(p + "attn_q.weight");
    l.wk = get(p + "attn_k.weight");
    l.wv = get(p + "attn_v.weight");
    l.bq = find(p + "attn_q.bias");
    l.bk = find(p + "attn_k.bias");
    l.bv = find(p + "attn_v.bias");
    l.q_norm = find(p + "attn_q_norm.weight");
    l.k_norm = find(p + "attn_k_norm.weight");
    l.wo = get(p + "attn_output.weight");
    l.attn_post_norm = find(p + "post_attention_norm.weight");
    l.ffn_norm = get(p + "ffn_norm.weight");
    l.w_gate = get(p + "ffn_gate.weight");
    l.w_up = get(p + "ffn_up.weight");
    l.w_down = get(p + "ffn_down.weight");
    l.ffn_post_norm = find(p + "post_ffw_norm.weight");
  }
  w.rope_inv_freq = rope_inverse_frequencies(config, nullptr);
  if (config.window_rope_differs()) w.rope_inv_freq_window = window_rope_inverse_frequencies(config);
  return w;
}

}  // namespace pagedgen
