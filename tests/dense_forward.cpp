#include "dense_forward.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <optional>

#include "cpu/cpu_ops.h"
#include "util/error.h"
#include "util/parallel_for.h"

namespace pagedgen {

DenseForward::DenseForward(const ModelConfig& config, const ModelWeights& weights, std::size_t capacity_tokens)
    : config_(config), weights_(weights), capacity_tokens_(capacity_tokens) {
  const auto per_layer = capacity_tokens * static_cast<std::size_t>(config.num_kv_heads * config.head_dim);
  k_cache_.assign(static_cast<std::size_t>(config.num_layers), std::vector<float>(per_layer));
  v_cache_.assign(static_cast<std::size_t>(config.num_layers), std::vector<float>(per_layer));
}

std::vector<float> DenseForward::forward(std::span<const TokenId> tokens, bool all_rows) {
  const std::size_t n = tokens.size();
  if (n == 0) return {};
  if (num_tokens_ + n > capacity_tokens_)
    fail("sequence of {} tokens exceeds the reference cache capacity of {}", num_tokens_ + n, capacity_tokens_);
  for (TokenId id : tokens)
    if (id < 0 || id >= config_.vocab_size)
      fail("token id {} is outside the vocabulary (size {})", id, config_.vocab_size);

  const auto hidden = static_cast<std::size_t>(config_.hidden_size);
  const auto head_dim = static_cast<std::size_t>(config_.head_dim);
  const auto q_dim = static_cast<std::size_t>(config_.num_heads) * head_dim;
  const auto kv_dim = static_cast<std::size_t>(config_.num_kv_heads) * head_dim;
  const auto ffn = static_cast<std::size_t>(config_.intermediate_size);
  const auto vocab = static_cast<std::size_t>(config_.vocab_size);

  std::vector<int32_t> positions(n);
  std::iota(positions.begin(), positions.end(), static_cast<int32_t>(num_tokens_));

  std::vector<float> x(n * hidden);     // (n, hidden) residual stream
  std::vector<float> xn(n * hidden);    // (n, hidden) normed input of a sub-block
  std::vector<float> q(n * q_dim);      // (n, num_heads, head_dim)
  std::vector<float> k(n * kv_dim);     // (n, num_kv_heads, head_dim)
  std::vector<float> v(n * kv_dim);     // (n, num_kv_heads, head_dim)
  std::vector<float> attn(n * q_dim);   // (n, num_heads, head_dim)
  std::vector<float> proj(n * hidden);  // (n, hidden)
  std::vector<float> gate(n * ffn);     // (n, intermediate)
  std::vector<float> up(n * ffn);       // (n, intermediate)

  cpu::embedding_gather(weights_.token_embd, tokens, x.data(), hidden);
  if (config_.embedding_scale != 1.0f) cpu::scale_in_place(x.data(), x.size(), config_.embedding_scale);
  const float eps = config_.rms_norm_eps;
  const auto num_heads = static_cast<std::size_t>(config_.num_heads);
  const auto num_kv_heads = static_cast<std::size_t>(config_.num_kv_heads);
  for (std::size_t layer = 0; layer < weights_.layers.size(); ++layer) {
    const LayerWeights& w = weights_.layers[layer];
    cpu::rms_norm(x.data(), w.attn_norm, xn.data(), n, hidden, eps);
    cpu::matmul(xn.data(), w.wq, q.data(), n, hidden, q_dim);
    cpu::matmul(xn.data(), w.wk, k.data(), n, hidden, kv_dim);
    cpu::matmul(xn.data(), w.wv, v.data(), n, hidden, kv_dim);
    if (w.bq != nullptr) {
      cpu::add_bias(q.data(), w.bq, n, q_dim);
      cpu::add_bias(k.data(), w.bk, n, kv_dim);
      cpu::add_bias(v.data(), w.bv, n, kv_dim);
    }
    if (w.q_norm != nullptr) {  // each head of q and k normed on its own
      cpu::rms_norm(q.data(), w.q_norm, q.data(), n * num_heads, head_dim, eps);
      cpu::rms_norm(k.data(), w.k_norm, k.data(), n * num_kv_heads, head_dim, eps);
    }
    const auto rope_dim = static_cast<std::size_t>(config_.rope_dim);
    const std::span<const float> inv_freq = layer_rope_inv_freq(config_, weights_, static_cast<int64_t>(layer));
    cpu::rope(q.data(), positions, num_heads, head_dim, rope_dim, config_.rope_layout, inv_freq);
    cpu::rope(k.data(), positions, num_kv_heads, head_dim, rope_dim, config_.rope_layout, inv_freq);
    std::copy(k.begin(), k.end(), k_cache_[layer].begin() + static_cast<std::ptrdiff_t>(num_tokens_ * kv_dim));
    std::copy(v.begin(), v.end(), v_cache_[layer].begin() + static_cast<std::ptrdiff_t>(num_tokens_ * kv_dim));
    attention(layer, n, q.data(), attn.data());
    cpu::matmul(attn.data(), w.wo, proj.data(), n, q_dim, hidden);
    if (w.attn_post_norm != nullptr) cpu::rms_norm(proj.data(), w.attn_post_norm, proj.data(), n, hidden, eps);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += proj[i];

    cpu::rms_norm(x.data(), w.ffn_norm, xn.data(), n, hidden, eps);
    cpu::matmul(xn.data(), w.w_gate, gate.data(), n, hidden, ffn);
    cpu::matmul(xn.data(), w.w_up, up.data(), n, hidden, ffn);
    cpu::gated_activation(config_.activation, gate.data(), up.data(), gate.data(), n * ffn);
    cpu::matmul(gate.data(), w.w_down, proj.data(), n, ffn, hidden);
    if (w.ffn_post_norm != nullptr) cpu::rms_norm(proj.data(), w.ffn_post_norm, proj.data(), n, hidden, eps);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
  }
  num_tokens_ += n;

  const std::size_t first_row = all_rows ? 0 : n - 1;
  const std::size_t num_rows = n - first_row;
  cpu::rms_norm(x.data() + first_row * hidden, weights_.output_norm, xn.data(), num_rows, hidden, eps);
  std::vector<float> logits(num_rows * vocab);
  cpu::matmul(xn.data(), weights_.output, logits.data(), num_rows, hidden, vocab);
  if (config_.final_logit_softcap) cpu::soft_cap(logits.data(), logits.size(), *config_.final_logit_softcap);
  return logits;
}

// Causal attention of the `num_new` newest tokens over the cached tokens of the sequence.
//   token t of the new ones sits at position p = num_tokens_ + t and sees positions 0..p,
//   or in a window layer of window W only p-W+1..p (clamped at 0);
//   query head h reads KV head h / (num_heads / num_kv_heads)   (GQA)
//   weight of position j: softmax over j of cap(scale * q . k_j), cap = soft-capping or none
void DenseForward::attention(std::size_t layer, std::size_t num_new, const float* q, float* out) const {
  const auto num_heads = static_cast<std::size_t>(config_.num_heads);
  const auto num_kv_heads = static_cast<std::size_t>(config_.num_kv_heads);
  const auto head_dim = static_cast<std::size_t>(config_.head_dim);
  const std::size_t group = num_heads / num_kv_heads;
  const float scale = config_.softmax_scale();
  const std::optional<float> cap = config_.attn_logit_softcap;
  const std::size_t window = config_.layer_has_window(static_cast<int64_t>(layer))
                                 ? static_cast<std::size_t>(*config_.sliding_window)
                                 : SIZE_MAX;
  const float* k_cache = k_cache_[layer].data();
  const float* v_cache = v_cache_[layer].data();

  // A decode step has one query token: its few heads are not worth starting threads for.
  const std::size_t num_threads = num_new > 1 ? default_num_threads() : 1;
  parallel_for(num_new * num_heads, num_threads, [&](std::size_t item) {
    const std::size_t t = item / num_heads;
    const std::size_t h = item % num_heads;
    const std::size_t kv_h = h / group;
    const std::size_t end = num_tokens_ + t + 1;
    const std::size_t first = end > window ? end - window : 0;
    const std::size_t num_visible = end - first;
    const float* qv = q + (t * num_heads + h) * head_dim;
    std::vector<float> scores(num_visible);
    float max_score = -INFINITY;
    for (std::size_t i = 0; i < num_visible; ++i) {
      const float* kv = k_cache + ((first + i) * num_kv_heads + kv_h) * head_dim;
      float dot = 0.0f;
      for (std::size_t d = 0; d < head_dim; ++d) dot += qv[d] * kv[d];
      scores[i] = dot * scale;
      if (cap) scores[i] = *cap * std::tanh(scores[i] / *cap);
      max_score = std::max(max_score, scores[i]);
    }
    float sum = 0.0f;
    for (float& s : scores) {
      s = std::exp(s - max_score);
      sum += s;
    }
    float* o = out + (t * num_heads + h) * head_dim;
    std::fill(o, o + head_dim, 0.0f);
    for (std::size_t i = 0; i < num_visible; ++i) {
      const float p = scores[i] / sum;
      const float* vv = v_cache + ((first + i) * num_kv_heads + kv_h) * head_dim;
      for (std::size_t d = 0; d < head_dim; ++d) o[d] += p * vv[d];
    }
  });
}

std::vector<TokenId> greedy_decode(DenseForward& model, std::span<const TokenId> prompt, std::size_t num_steps) {
  std::vector<TokenId> out;
  std::vector<float> logits = model.forward(prompt);
  for (std::size_t step = 0; step < num_steps; ++step) {
    const auto best = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(best);
    if (step + 1 == num_steps) break;
    const TokenId next[] = {best};
    logits = model.forward(next);
  }
  return out;
}

}  // namespace pagedgen
