#include "model/model_weights.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "model/dequant.h"
#include "model/fused_tensors.h"
#include "model/quant_blocks.h"
#include "util/error.h"
#include "util/mapped_file.h"
#include "util/parallel_for.h"

namespace pagedgen {

namespace {

struct PendingTensor {
  const RawTensor* raw;
  float* dst;
  std::size_t num_elements;
};

struct PendingPacked {
  const RawTensor* raw;
  const PackedMatrix** dst;
};

struct PendingHalf {
  const RawTensor* raw;
  const HalfMatrix** dst;
};

class WeightLoader {
 public:
  WeightLoader(const ModelConfig& config, std::span<const RawTensor> tensors, const std::string& source,
               WeightForm form, ModelWeights& weights)
      : config_(config), tensors_(tensors), source_(source), form_(form), weights_(weights) {}

  // A matrix: kept as stored (in *packed or *half, filled by convert_all) when the form
  // asks for it and its type allows, else float32 (in *dense).
  void require_matrix(const std::string& name, std::vector<uint64_t> shape, const float** dense,
                      const PackedMatrix** packed, const HalfMatrix** half) {
    const RawTensor* raw = find(name);
    if (form_ == WeightForm::kFloat32 || raw == nullptr || raw->shape != shape) {
      *dense = require(name, std::move(shape));
      return;
    }
    const auto type = static_cast<GgmlType>(raw->raw_type);
    const std::optional<QuantFormat> format = quant_format(type);
    if (format && shape[1] % format->block_elements == 0) {
      pending_packed_.push_back({raw, packed});
    } else if (type == GgmlType::F16 || type == GgmlType::BF16) {
      pending_half_.push_back({raw, half});
    } else {
      *dense = require(name, std::move(shape));
      return;
    }
    *dense = nullptr;
    weights_.num_parameters += shape[0] * shape[1];
  }

  // Reserves float storage for `name` with the expected row-major shape; the data is
  // converted later, all tensors at once, in parallel.
  const float* require(const std::string& name, std::vector<uint64_t> shape) {
    const float* p = optional(name, std::move(shape));
    if (p == nullptr) fail_missing_tensor(source_, name, config_.architecture);
    return p;
  }

  const float* optional(const std::string& name, std::vector<uint64_t> shape) {
    const RawTensor* raw = find(name);
    if (raw == nullptr) return nullptr;
    check_raw_tensor(*raw, shape, source_);
    std::size_t n = 1;
    for (uint64_t d : shape) n *= d;
    weights_.storage.push_back(std::make_unique<float[]>(n));
    pending_.push_back({raw, weights_.storage.back().get(), n});
    weights_.num_parameters += n;
    return weights_.storage.back().get();
  }

  // Converts every tensor into its loaded form. A tensor's file pages are given back as
  // soon as it is copied (they fault in again if read), so the file and its copy are never
  // resident together. Between tensors, `stop` is read: Stopped once it asks.
  void convert_all(const StopToken& stop) {
    parallel_for(pending_.size(), default_num_threads(), [&](std::size_t i) {
      if (stop.stop_requested()) return;  // a worker cannot throw: the ones left are skipped
      const PendingTensor& t = pending_[i];
      dequantize(static_cast<GgmlType>(t.raw->raw_type), t.raw->data, {t.dst, t.num_elements});
      release_mapped_pages(t.raw->data);
    });
    for (const PendingPacked& p : pending_packed_) {  // each packs in parallel itself
      stop.throw_if_stopped();
      weights_.packed_storage.push_back(std::make_unique<PackedMatrix>(
          static_cast<GgmlType>(p.raw->raw_type), reinterpret_cast<const uint8_t*>(p.raw->data.data()), p.raw->shape[0],
          p.raw->shape[1]));
      *p.dst = weights_.packed_storage.back().get();
      release_mapped_pages(p.raw->data);
    }
    for (const PendingHalf& h : pending_half_) {
      stop.throw_if_stopped();
      weights_.half_storage.push_back(std::make_unique<HalfMatrix>(static_cast<GgmlType>(h.raw->raw_type),
                                                                   reinterpret_cast<const uint8_t*>(h.raw->data.data()),
                                                                   h.raw->shape[0], h.raw->shape[1]));
      *h.dst = weights_.half_storage.back().get();
      release_mapped_pages(h.raw->data);
    }
  }

 private:
  const RawTensor* find(const std::string& name) const { return find_raw_tensor(tensors_, name); }

  const ModelConfig& config_;
  std::span<const RawTensor> tensors_;
  const std::string& source_;
  WeightForm form_;
  ModelWeights& weights_;
  std::vector<PendingTensor> pending_;
  std::vector<PendingPacked> pending_packed_;
  std::vector<PendingHalf> pending_half_;
};

}  // namespace

ModelWeights load_model_weights(const ModelConfig& c, std::span<const RawTensor> file_tensors,
                                const std::string& source, WeightForm form, const StopToken& stop) {
  const std::vector<RawTensor> tensors = split_fused_tensors(file_tensors, c, source);
  const auto hidden = static_cast<uint64_t>(c.hidden_size);
  const auto q_dim = static_cast<uint64_t>(c.num_heads * c.head_dim);
  const auto kv_dim = static_cast<uint64_t>(c.num_kv_heads * c.head_dim);
  const auto ffn = static_cast<uint64_t>(c.intermediate_size);
  const auto vocab = static_cast<uint64_t>(c.vocab_size);
  const auto head_dim = static_cast<uint64_t>(c.head_dim);

  ModelWeights w;
  WeightLoader loader(c, tensors, source, form, w);
  loader.require_matrix("token_embd.weight", {vocab, hidden}, &w.token_embd, &w.token_embd_packed, &w.token_embd_half);
  w.output_norm = loader.require("output_norm.weight", {hidden});
  if (!c.tied_embeddings)
    loader.require_matrix("output.weight", {vocab, hidden}, &w.output, &w.output_packed, &w.output_half);
  const float* freq_divisors = loader.optional("rope_freqs.weight", {static_cast<uint64_t>(c.rope_dim / 2)});
  // In place and never reallocated: the loader fills the packed pointers later.
  w.layers.reserve(static_cast<std::size_t>(c.num_layers));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    LayerWeights& l = w.layers.emplace_back();
    l.attn_norm = loader.require(p + "attn_norm.weight", {hidden});
    loader.require_matrix(p + "attn_q.weight", {q_dim, hidden}, &l.wq, &l.packed.wq, &l.half.wq);
    loader.require_matrix(p + "attn_k.weight", {kv_dim, hidden}, &l.wk, &l.packed.wk, &l.half.wk);
    loader.require_matrix(p + "attn_v.weight", {kv_dim, hidden}, &l.wv, &l.packed.wv, &l.half.wv);
    if (c.qkv_bias) {
      l.bq = loader.require(p + "attn_q.bias", {q_dim});
      l.bk = loader.require(p + "attn_k.bias", {kv_dim});
      l.bv = loader.require(p + "attn_v.bias", {kv_dim});
    }
    if (c.qk_norm) {
      l.q_norm = loader.require(p + "attn_q_norm.weight", {head_dim});
      l.k_norm = loader.require(p + "attn_k_norm.weight", {head_dim});
    }
    loader.require_matrix(p + "attn_output.weight", {hidden, q_dim}, &l.wo, &l.packed.wo, &l.half.wo);
    if (c.post_norms) l.attn_post_norm = loader.require(p + "post_attention_norm.weight", {hidden});
    l.ffn_norm = loader.require(p + "ffn_norm.weight", {hidden});
    loader.require_matrix(p + "ffn_gate.weight", {ffn, hidden}, &l.w_gate, &l.packed.w_gate, &l.half.w_gate);
    loader.require_matrix(p + "ffn_up.weight", {ffn, hidden}, &l.w_up, &l.packed.w_up, &l.half.w_up);
    loader.require_matrix(p + "ffn_down.weight", {hidden, ffn}, &l.w_down, &l.packed.w_down, &l.half.w_down);
    if (c.post_norms) l.ffn_post_norm = loader.require(p + "post_ffw_norm.weight", {hidden});
  }
  loader.convert_all(stop);
  stop.throw_if_stopped();
  if (c.tied_embeddings) {  // the output head is the embedding table
    w.output = w.token_embd;
    w.output_packed = w.token_embd_packed;
    w.output_half = w.token_embd_half;
  }
  w.rope_inv_freq = rope_inverse_frequencies(c, freq_divisors);
  if (c.window_rope_differs()) w.rope_inv_freq_window = window_rope_inverse_frequencies(c);
  return w;
}

std::span<const float> layer_rope_inv_freq(const ModelConfig& config, const ModelWeights& weights, int64_t layer) {
  if (config.window_rope_differs() && config.layer_has_window(layer)) {
    PG_CHECK(!weights.rope_inv_freq_window.empty(), "layer {} rotates with the window table, which is not loaded",
             layer);
    return weights.rope_inv_freq_window;
  }
  return weights.rope_inv_freq;
}

std::vector<float> window_rope_inverse_frequencies(const ModelConfig& config) {
  ModelConfig window = config;
  window.rope_theta = config.window_rope_theta;
  window.rope_linear_factor = 1.0f;
  window.rope_scaling.reset();
  return rope_inverse_frequencies(window, nullptr);
}

std::vector<float> rope_inverse_frequencies(const ModelConfig& config, const float* freq_divisors) {
  const int64_t num_pairs = config.rope_dim / 2;
  std::vector<float> inv_freq(static_cast<std::size_t>(num_pairs));
  for (int64_t i = 0; i < num_pairs; ++i) {
    double f = std::pow(static_cast<double>(config.rope_theta),
                        -2.0 * static_cast<double>(i) / static_cast<double>(config.rope_dim));
    if (freq_divisors != nullptr) {
      f /= freq_divisors[i];
    } else if (config.rope_scaling) {
      // Llama 3.1: long wavelengths are slowed by `factor`, short ones kept, and the band
      // between them interpolated.
      const Llama3RopeScaling& s = *config.rope_scaling;
      const double old_ctx = static_cast<double>(s.original_context_length);
      const double wavelen = 2.0 * std::numbers::pi / f;
      const double low_wavelen = old_ctx / s.low_freq_factor;
      const double high_wavelen = old_ctx / s.high_freq_factor;
      if (wavelen > low_wavelen) {
        f /= s.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (old_ctx / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1.0 - smooth) * f / s.factor + smooth * f;
      }
    }
    inv_freq[static_cast<std::size_t>(i)] = static_cast<float>(f / static_cast<double>(config.rope_linear_factor));
  }
  return inv_freq;
}

}  // namespace pagedgen
