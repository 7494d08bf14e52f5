#include "backend/kv_kind_sizes.h"
#include "cpu/cpu_backend.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "backend/step_batch_check.h"
#include "cpu/cpu_gemm.h"
#include "cpu/cpu_ops.h"
#include "cpu/paged_attention.h"
#include "cpu/quant_gemm.h"
#include "util/byte_units.h"
#include "util/error.h"
#include "util/system_memory.h"

namespace pagedgen {

namespace {

void grow(std::vector<float>& buffer, std::size_t size) {
  if (buffer.size() < size) buffer.resize(size);
}

void add_in_place(float* x, const float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace

CpuBackend::CpuBackend(const ModelConfig& config, const ModelWeights& weights, std::size_t num_threads,
                       cpu::CpuIsa isa, KvDtype kv_dtype)
    : config_(config),
      weights_(weights),
      pool_(std::max<std::size_t>(1, num_threads)),
      isa_(isa),
      host_sampling_(&pool_),
      kv_dtype_(kv_dtype) {
  PG_CHECK(weights.layers.size() == static_cast<std::size_t>(config.num_layers), "weights have {} layers, config {}",
           weights.layers.size(), config.num_layers);
  layouts_ = {KvLayout{0, config.num_kv_heads, 0, config.head_dim}};
  layer_kinds_.assign(static_cast<std::size_t>(config.num_layers), 0);
  has_packed_ = weights.token_embd_packed != nullptr || weights.output_packed != nullptr;
  for (const LayerWeights& layer : weights.layers) {
    PG_CHECK(config.qk_norm == (layer.q_norm != nullptr && layer.k_norm != nullptr) &&
                 config.post_norms == (layer.attn_post_norm != nullptr && layer.ffn_post_norm != nullptr),
             "the weights' q/k and post norms disagree with the {} config", config.architecture);
    PG_CHECK(!config.window_rope_differs() || !weights.rope_inv_freq_window.empty(),
             "the window layers' RoPE table is not loaded");
    const PackedLayerWeights& p = layer.packed;
    for (const PackedMatrix* m : {p.wq, p.wk, p.wv, p.wo, p.w_gate, p.w_up, p.w_down}) has_packed_ = has_packed_ || m != nullptr;
  }
}

std::size_t CpuBackend::kv_bytes_per_block(std::size_t block_size) const {
  return config_.kv_bytes_per_token(kv_dtype_bytes(kv_dtype_)) * block_size;
}

std::vector<int32_t> CpuBackend::kv_kind_windows() const { return pagedgen::kv_kind_windows(config_); }

std::size_t CpuBackend::kv_kind_bytes_per_block(KvKindId kind, std::size_t block_size) const {
  return kv_kind_bytes(config_, kind, kv_bytes_per_block(block_size));
}

int32_t CpuBackend::kv_pool_blocks(const KvPoolBudget& budget, std::size_t block_size) const {
  const std::size_t per_block = kv_bytes_per_block(block_size);
  const int32_t num_blocks = host_pool_blocks(budget, per_block, block_size);
  const uint64_t bytes = static_cast<uint64_t>(num_blocks) * per_block;
  const std::optional<uint64_t> available = available_memory_bytes();
  if (available && bytes > *available)
    fail_setting(budget.num_blocks ? "num_blocks" : "kv_cache_memory",
                 "asks for a KV pool of {} ({} blocks of {} tokens), more than the {} of memory this machine has "
                 "available; ask for less", format_bytes(bytes), num_blocks, block_size, format_bytes(*available));
  return num_blocks;
}

void CpuBackend::allocate_kv_pool(std::size_t num_blocks, std::size_t block_size) {
  const int32_t one_kind[] = {static_cast<int32_t>(num_blocks)};
  layer_kinds_.assign(static_cast<std::size_t>(config_.num_layers), 0);
  allocate_pools(one_kind, block_size);
}

void CpuBackend::allocate_kv_pools(std::span<const int32_t> kind_num_blocks, std::size_t block_size) {
  PG_CHECK(kind_num_blocks.size() == config_.kv_kinds().size(), "{} pool kinds for a model of {}",
           kind_num_blocks.size(), config_.kv_kinds().size());
  for (int64_t layer = 0; layer < config_.num_layers; ++layer)
    layer_kinds_[static_cast<std::size_t>(layer)] = config_.layer_kv_kind(layer);
  allocate_pools(kind_num_blocks, block_size);
}

void CpuBackend::allocate_pools(std::span<const int32_t> kind_num_blocks, std::size_t block_size) {
  PG_CHECK(block_size >= 1, "block size must be at least 1");
  layouts_.clear();
  for (int32_t num_blocks : kind_num_blocks)
    layouts_.push_back(KvLayout{num_blocks, config_.num_kv_heads, static_cast<int64_t>(block_size), config_.head_dim});
  k_pools_.clear();
  v_pools_.clear();
  for (std::size_t layer = 0; layer < layer_kinds_.size(); ++layer) {
    const std::size_t bytes = static_cast<std::size_t>(layer_layout(layer).elements_per_layer()) * kv_dtype_bytes(kv_dtype_);
    k_pools_.emplace_back(new std::byte[bytes]);
    v_pools_.emplace_back(new std::byte[bytes]);
  }
}

std::span<float> CpuBackend::float_pool(const std::vector<std::unique_ptr<std::byte[]>>& pools,
                                        std::size_t layer) const {
  PG_CHECK(kv_dtype_ == KvDtype::kFloat32, "the {} KV pools are not float32", kv_dtype_name(kv_dtype_));
  return {reinterpret_cast<float*>(pools.at(layer).get()), static_cast<std::size_t>(layer_layout(layer).elements_per_layer())};
}

void CpuBackend::ensure_activations(std::size_t num_tokens, std::size_t num_logits) {
  const auto hidden = static_cast<std::size_t>(config_.hidden_size);
  const auto q_dim = static_cast<std::size_t>(config_.num_heads * config_.head_dim);
  const auto kv_dim = static_cast<std::size_t>(config_.num_kv_heads * config_.head_dim);
  const auto ffn = static_cast<std::size_t>(config_.intermediate_size);
  grow(x_, num_tokens * hidden);
  grow(xn_, num_tokens * hidden);
  grow(q_, num_tokens * q_dim);
  grow(k_, num_tokens * kv_dim);
  grow(v_, num_tokens * kv_dim);
  grow(attn_, num_tokens * q_dim);
  grow(proj_, num_tokens * hidden);
  grow(gate_, num_tokens * ffn);
  grow(up_, num_tokens * ffn);
  grow(head_in_, num_logits * hidden);
  if (has_packed_) {
    const std::size_t widest = std::max({hidden, q_dim, ffn});
    const std::size_t rows = std::max(num_tokens, num_logits);
    if (xq_.size() < rows * (widest / 32)) xq_.resize(rows * (widest / 32));
  }
}

template <typename Fn>
void CpuBackend::for_row_chunks(std::size_t num_rows, Fn&& fn) {
  // Few rows per chunk keeps both threads busy at decode; the split never changes a
  // result because the operations are row by row.
  constexpr std::size_t kRowsPerChunk = 8;
  pool_.run((num_rows + kRowsPerChunk - 1) / kRowsPerChunk, [&](std::size_t chunk, std::size_t) {
    const std::size_t begin = chunk * kRowsPerChunk;
    fn(begin, std::min(num_rows, begin + kRowsPerChunk));
  });
}

void CpuBackend::quantize_chunk(const float* x, std::size_t r0, std::size_t r1, std::size_t cols) {
  if (!has_packed_ || cols % 32 != 0) return;  // then no matrix of this width is packed
  const std::size_t num_blocks = cols / 32;
  cpu::quantize_rows_q8(x + r0 * cols, r1 - r0, cols, xq_.data() + r0 * num_blocks, isa_);
}

void CpuBackend::matmuls(const float* x, std::size_t rows, std::size_t in_features,
                         std::initializer_list<Product> products) {
  std::array<cpu::QuantProduct, 3> packed;
  std::size_t num_packed = 0;
  for (const Product& p : products) {
    if (p.packed != nullptr) {
      packed.at(num_packed++) = {p.packed, p.y};
    } else if (p.half != nullptr && p.half->is_bfloat16()) {
      cpu::gemm(x, p.half->bfloat16(), p.y, rows, in_features, p.out_features, pool_);
    } else if (p.half != nullptr) {
      cpu::gemm(x, p.half->float16(), p.y, rows, in_features, p.out_features, pool_);
    } else {
      cpu::gemm(x, p.dense, p.y, rows, in_features, p.out_features, pool_);
    }
  }
  cpu::quant_gemm(xq_.data(), rows, std::span(packed.data(), num_packed), pool_, isa_);
}

void CpuBackend::forward(const StepBatch& batch, std::span<float> logits) {
  PG_CHECK(!k_pools_.empty(), "forward before allocate_kv_pool");
  check_step_batch(batch, layouts_, config_.vocab_size, logits.size());
  const auto n = static_cast<std::size_t>(batch.num_tokens);
  if (n == 0) return;
  const auto hidden = static_cast<std::size_t>(config_.hidden_size);
  const auto num_heads = static_cast<std::size_t>(config_.num_heads);
  const auto num_kv_heads = static_cast<std::size_t>(config_.num_kv_heads);
  const auto head_dim = static_cast<std::size_t>(config_.head_dim);
  const auto q_dim = num_heads * head_dim;
  const auto kv_dim = num_kv_heads * head_dim;
  const auto ffn = static_cast<std::size_t>(config_.intermediate_size);
  const auto vocab = static_cast<std::size_t>(config_.vocab_size);
  const auto rope_dim = static_cast<std::size_t>(config_.rope_dim);
  const float eps = config_.rms_norm_eps;
  const std::size_t num_logits = batch.logits_rows.size();
  ensure_activations(n, num_logits);
  const std::span<const int32_t> positions(batch.positions);

  const std::size_t num_pairs = rope_dim / 2;
  grow(rope_cos_sin_, n * num_pairs * 2);
  if (config_.window_rope_differs()) grow(rope_cos_sin_window_, n * num_pairs * 2);
  // The embeddings, the first norm and the RoPE rotations of the step's positions (used by
  // every layer; the window layers have their own when they rotate otherwise).
  const float* attn_norm0 = weights_.layers.front().attn_norm;
  for_row_chunks(n, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const auto token = static_cast<std::size_t>(batch.token_ids[r]);
      if (weights_.token_embd_packed != nullptr) weights_.token_embd_packed->dequantize_row(token, x_.data() + r * hidden);
      else if (weights_.token_embd_half != nullptr) weights_.token_embd_half->dequantize_row(token, x_.data() + r * hidden);
      else std::memcpy(x_.data() + r * hidden, weights_.token_embd + token * hidden, hidden * sizeof(float));
    }
    if (config_.embedding_scale != 1.0f)
      cpu::scale_in_place(x_.data() + r0 * hidden, (r1 - r0) * hidden, config_.embedding_scale);
    cpu::rope_rotations(positions.subspan(r0, r1 - r0), std::span(weights_.rope_inv_freq).first(num_pairs),
                        rope_cos_sin_.data() + r0 * num_pairs * 2);
    if (config_.window_rope_differs())
      cpu::rope_rotations(positions.subspan(r0, r1 - r0), std::span(weights_.rope_inv_freq_window).first(num_pairs),
                          rope_cos_sin_window_.data() + r0 * num_pairs * 2);
    norm_chunk(attn_norm0, r0, r1);
  });
  for (std::size_t layer = 0; layer < weights_.layers.size(); ++layer) {
    const LayerWeights& w = weights_.layers[layer];
    const bool window_rope = config_.window_rope_differs() && config_.layer_has_window(static_cast<int64_t>(layer));
    const float* layer_cos_sin = window_rope ? rope_cos_sin_window_.data() : rope_cos_sin_.data();
    // Attention sub-block: x += wo @ attention(rope(wq @ norm(x)), rope(wk @ norm(x)), wv @ norm(x)),
    // norm(x) in xn_ (and xq_) already; with q/k norms each head is normed before RoPE, with
    // post norms the sub-block's output before the residual add.
    matmuls(xn_.data(), n, hidden,
            {{w.wq, w.packed.wq, w.half.wq, q_.data(), q_dim}, {w.wk, w.packed.wk, w.half.wk, k_.data(), kv_dim},
             {w.wv, w.packed.wv, w.half.wv, v_.data(), kv_dim}});
    for_row_chunks(n, [&](std::size_t r0, std::size_t r1) {
      if (w.bq != nullptr) {
        cpu::add_bias(q_.data() + r0 * q_dim, w.bq, r1 - r0, q_dim);
        cpu::add_bias(k_.data() + r0 * kv_dim, w.bk, r1 - r0, kv_dim);
        cpu::add_bias(v_.data() + r0 * kv_dim, w.bv, r1 - r0, kv_dim);
      }
      if (w.q_norm != nullptr) {
        cpu::rms_norm(q_.data() + r0 * q_dim, w.q_norm, q_.data() + r0 * q_dim, (r1 - r0) * num_heads, head_dim, eps);
        cpu::rms_norm(k_.data() + r0 * kv_dim, w.k_norm, k_.data() + r0 * kv_dim, (r1 - r0) * num_kv_heads, head_dim,
                      eps);
      }
      const float* cos_sin = layer_cos_sin + r0 * num_pairs * 2;
      cpu::rope_rotate(q_.data() + r0 * q_dim, cos_sin, r1 - r0, num_heads, head_dim, rope_dim, config_.rope_layout);
      cpu::rope_rotate(k_.data() + r0 * kv_dim, cos_sin, r1 - r0, num_kv_heads, head_dim, rope_dim,
                       config_.rope_layout);
      // Every new token's K/V goes in before attention: later tokens of a chunk read earlier ones.
      write_kv(layer, batch, r0, r1);
    });
    attention(layer, batch);
    for_row_chunks(n, [&](std::size_t r0, std::size_t r1) { quantize_chunk(attn_.data(), r0, r1, q_dim); });
    matmuls(attn_.data(), n, q_dim, {{w.wo, w.packed.wo, w.half.wo, proj_.data(), hidden}});
    for_row_chunks(n, [&](std::size_t r0, std::size_t r1) {
      if (w.attn_post_norm != nullptr)
        cpu::rms_norm(proj_.data() + r0 * hidden, w.attn_post_norm, proj_.data() + r0 * hidden, r1 - r0, hidden, eps);
      add_in_place(x_.data() + r0 * hidden, proj_.data() + r0 * hidden, (r1 - r0) * hidden);
      norm_chunk(w.ffn_norm, r0, r1);
    });

    // MLP sub-block: x += w_down @ (act(w_gate @ norm(x)) * (w_up @ norm(x))), act silu or gelu_tanh
    matmuls(xn_.data(), n, hidden,
            {{w.w_gate, w.packed.w_gate, w.half.w_gate, gate_.data(), ffn},
             {w.w_up, w.packed.w_up, w.half.w_up, up_.data(), ffn}});
    for_row_chunks(n, [&](std::size_t r0, std::size_t r1) {
      cpu::gated_activation(config_.activation, gate_.data() + r0 * ffn, up_.data() + r0 * ffn, gate_.data() + r0 * ffn,
                            (r1 - r0) * ffn);
      quantize_chunk(gate_.data(), r0, r1, ffn);
    });
    matmuls(gate_.data(), n, ffn, {{w.w_down, w.packed.w_down, w.half.w_down, proj_.data(), hidden}});
    // The residual, then the next layer's attention norm (none after the last layer).
    const float* next_norm = layer + 1 < weights_.layers.size() ? weights_.layers[layer + 1].attn_norm : nullptr;
    for_row_chunks(n, [&](std::size_t r0, std::size_t r1) {
      if (w.ffn_post_norm != nullptr)
        cpu::rms_norm(proj_.data() + r0 * hidden, w.ffn_post_norm, proj_.data() + r0 * hidden, r1 - r0, hidden, eps);
      add_in_place(x_.data() + r0 * hidden, proj_.data() + r0 * hidden, (r1 - r0) * hidden);
      if (next_norm != nullptr) norm_chunk(next_norm, r0, r1);
    });
  }

  // Final norm and output head only for the rows whose logits are asked for.
  for (std::size_t i = 0; i < num_logits; ++i) {
    const auto row = static_cast<std::size_t>(batch.logits_rows[i]);
    cpu::rms_norm(x_.data() + row * hidden, weights_.output_norm, head_in_.data() + i * hidden, 1, hidden, eps);
  }
  for_row_chunks(num_logits, [&](std::size_t r0, std::size_t r1) { quantize_chunk(head_in_.data(), r0, r1, hidden); });
  matmuls(head_in_.data(), num_logits, hidden, {{weights_.output, weights_.output_packed, weights_.output_half, logits.data(), vocab}});
  if (config_.final_logit_softcap) {
    const float cap = *config_.final_logit_softcap;
    for_row_chunks(num_logits, [&](std::size_t r0, std::size_t r1) {
      cpu::soft_cap(logits.data() + r0 * vocab, (r1 - r0) * vocab, cap);
    });
  }
}

void CpuBackend::norm_chunk(const float* weight, std::size_t r0, std::size_t r1) {
  const auto hidden = static_cast<std::size_t>(config_.hidden_size);
  cpu::rms_norm(x_.data() + r0 * hidden, weight, xn_.data() + r0 * hidden, r1 - r0, hidden, config_.rms_norm_eps);
  quantize_chunk(xn_.data(), r0, r1, hidden);
}

void CpuBackend::write_kv(std::size_t layer, const StepBatch& batch, std::size_t r0, std::size_t r1) {
  const auto kv_dim = static_cast<std::size_t>(config_.num_kv_heads * config_.head_dim);
  auto write = [&](auto* k_pool, auto* v_pool) {
    auto args = cpu::kv_write_args(batch, k_.data(), v_.data(), k_pool, v_pool, layer_layout(layer));
    args.k += r0 * kv_dim;
    args.v += r0 * kv_dim;
    args.slot_mapping = batch.kind_slot_mapping(layer_kinds_[layer]).data() + r0;
    args.num_tokens = static_cast<int32_t>(r1 - r0);
    cpu::write_kv_cache(args);
  };
  std::byte* k_pool = k_pools_[layer].get();
  std::byte* v_pool = v_pools_[layer].get();
  switch (kv_dtype_) {
    case KvDtype::kFloat32: write(reinterpret_cast<float*>(k_pool), reinterpret_cast<float*>(v_pool)); break;
    case KvDtype::kFloat16: write(reinterpret_cast<Float16*>(k_pool), reinterpret_cast<Float16*>(v_pool)); break;
    case KvDtype::kBFloat16: write(reinterpret_cast<BFloat16*>(k_pool), reinterpret_cast<BFloat16*>(v_pool)); break;
  }
}

void CpuBackend::attention(std::size_t layer, const StepBatch& batch) {
  auto run = [&](const auto* k_pool, const auto* v_pool) {
    const bool has_window = config_.layer_has_window(static_cast<int64_t>(layer));
    const auto window = has_window ? static_cast<int32_t>(*config_.sliding_window) : 0;
    auto args = cpu::paged_attention_args(batch, q_.data(), static_cast<int32_t>(config_.num_heads), k_pool, v_pool,
                                          layer_layout(layer), config_.softmax_scale(), attn_.data(), window,
                                          config_.attn_logit_softcap.value_or(0.0f));
    args.block_tables = batch.kind_block_tables(layer_kinds_[layer]).data();
    cpu::paged_attention(args, pool_);
  };
  const std::byte* k_pool = k_pools_[layer].get();
  const std::byte* v_pool = v_pools_[layer].get();
  switch (kv_dtype_) {
    case KvDtype::kFloat32:
      run(reinterpret_cast<const float*>(k_pool), reinterpret_cast<const float*>(v_pool));
      break;
    case KvDtype::kFloat16:
      run(reinterpret_cast<const Float16*>(k_pool), reinterpret_cast<const Float16*>(v_pool));
      break;
    case KvDtype::kBFloat16:
      run(reinterpret_cast<const BFloat16*>(k_pool), reinterpret_cast<const BFloat16*>(v_pool));
      break;
  }
}

void CpuBackend::copy_blocks(std::span<const BlockCopy> copies) {
  const std::size_t element_bytes = kv_dtype_bytes(kv_dtype_);
  for (const BlockCopy& copy : copies) {
    PG_CHECK(copy.kind >= 0 && copy.kind < std::ssize(layouts_), "block copy of layer kind {}, the pools have {}",
             copy.kind, layouts_.size());
    const KvLayout& layout = layouts_[static_cast<std::size_t>(copy.kind)];
    PG_CHECK(copy.src >= 0 && copy.src < layout.num_blocks && copy.dst >= 0 && copy.dst < layout.num_blocks,
             "block copy {} -> {} outside a pool of {} blocks", copy.src, copy.dst, layout.num_blocks);
    if (copy.src == copy.dst) continue;
    const std::size_t block_bytes = static_cast<std::size_t>(layout.block_stride()) * element_bytes;
    const std::size_t src = static_cast<std::size_t>(layout.offset(copy.src, 0, 0, 0)) * element_bytes;
    const std::size_t dst = static_cast<std::size_t>(layout.offset(copy.dst, 0, 0, 0)) * element_bytes;
    for (std::size_t layer = 0; layer < k_pools_.size(); ++layer) {
      if (layer_kinds_[layer] != copy.kind) continue;
      std::memcpy(k_pools_[layer].get() + dst, k_pools_[layer].get() + src, block_bytes);
      std::memcpy(v_pools_[layer].get() + dst, v_pools_[layer].get() + src, block_bytes);
    }
  }
}

}  // namespace pagedgen
