// The CPU backend's layer ops (model/layer_op.h): each op of the layer program over the
// step's rows, in parallel row chunks where rows are independent, on the activations the
// backend keeps (cpu_backend.h). Normed and activated rows are quantized for the int8 path
// as soon as they are written, so the products after them read xq_.
#include <cstring>
#include <variant>

#include "cpu/cpu_backend.h"
#include "cpu/cpu_ops.h"
#include "util/error.h"

namespace pagedgen {

namespace {

void add_in_place(float* x, const float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace

void CpuBackend::run(const EmbedTokens& op) {
  const auto hidden = static_cast<std::size_t>(config_.hidden_size);
  for_row_chunks(num_rows(), [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const auto token = static_cast<std::size_t>(step_->token_ids[r]);
      if (weights_.token_embd_packed != nullptr)
        weights_.token_embd_packed->dequantize_row(token, x_.data() + r * hidden);
      else if (weights_.token_embd_half != nullptr)
        weights_.token_embd_half->dequantize_row(token, x_.data() + r * hidden);
      else
        std::memcpy(x_.data() + r * hidden, weights_.token_embd + token * hidden, hidden * sizeof(float));
    }
    if (op.scale != 1.0f) cpu::scale_in_place(x_.data() + r0 * hidden, (r1 - r0) * hidden, op.scale);
  });
}

void CpuBackend::run(const ResidualNorm& op) {
  const auto hidden = static_cast<std::size_t>(config_.hidden_size);
  const float* norm = norm_weight(op.norm);
  const float* delta_norm = op.delta_norm ? norm_weight(*op.delta_norm) : nullptr;
  if (!op.logits_rows) {
    for_row_chunks(num_rows(), [&](std::size_t r0, std::size_t r1) {
      if (op.add_delta) add_delta(delta_norm, r0, r1);
      norm_chunk(norm, r0, r1);
    });
    return;
  }
  const std::span<const int32_t> rows(step_->logits_rows);
  for_row_chunks(rows.size(), [&](std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) {
      const auto row = static_cast<std::size_t>(rows[i]);
      if (op.add_delta) add_delta(delta_norm, row, row + 1);
      cpu::rms_norm(x_.data() + row * hidden, norm, head_in_.data() + i * hidden, 1, hidden, config_.rms_norm_eps);
    }
    quantize_chunk(head_in_.data(), i0, i1, hidden);
  });
}

void CpuBackend::add_delta(const float* delta_norm, std::size_t r0, std::size_t r1) {
  const auto hidden = static_cast<std::size_t>(config_.hidden_size);
  float* delta = proj_.data() + r0 * hidden;
  if (delta_norm != nullptr) cpu::rms_norm(delta, delta_norm, delta, r1 - r0, hidden, config_.rms_norm_eps);
  add_in_place(x_.data() + r0 * hidden, delta, (r1 - r0) * hidden);
}

void CpuBackend::norm_chunk(const float* weight, std::size_t r0, std::size_t r1) {
  const auto hidden = static_cast<std::size_t>(config_.hidden_size);
  cpu::rms_norm(x_.data() + r0 * hidden, weight, xn_.data() + r0 * hidden, r1 - r0, hidden, config_.rms_norm_eps);
  quantize_chunk(xn_.data(), r0, r1, hidden);
}

void CpuBackend::run(const QkvProjection& op) {
  const LayerWeights& w = layer_weights(op.layer);
  const auto q_dim = static_cast<std::size_t>(config_.num_heads * config_.head_dim);
  const auto kv_dim = static_cast<std::size_t>(config_.num_kv_heads * config_.head_dim);
  matmuls(xn_.data(), num_rows(), static_cast<std::size_t>(config_.hidden_size),
          {{w.wq, w.packed.wq, w.half.wq, q_.data(), q_dim},
           {w.wk, w.packed.wk, w.half.wk, k_.data(), kv_dim},
           {w.wv, w.packed.wv, w.half.wv, v_.data(), kv_dim}});
}

void CpuBackend::run(const QkvRopeKvWrite& op) {
  const LayerWeights& w = layer_weights(op.layer);
  const auto num_heads = static_cast<std::size_t>(config_.num_heads);
  const auto num_kv_heads = static_cast<std::size_t>(config_.num_kv_heads);
  const auto head_dim = static_cast<std::size_t>(config_.head_dim);
  const auto rope_dim = static_cast<std::size_t>(config_.rope_dim);
  const std::size_t q_dim = num_heads * head_dim, kv_dim = num_kv_heads * head_dim;
  const float eps = config_.rms_norm_eps;
  const float* table = op.rope == RopeTable::kWindow ? rope_cos_sin_window_.data() : rope_cos_sin_.data();
  for_row_chunks(num_rows(), [&](std::size_t r0, std::size_t r1) {
    float* q = q_.data() + r0 * q_dim;
    float* k = k_.data() + r0 * kv_dim;
    if (op.bias) {
      cpu::add_bias(q, w.bq, r1 - r0, q_dim);
      cpu::add_bias(k, w.bk, r1 - r0, kv_dim);
      cpu::add_bias(v_.data() + r0 * kv_dim, w.bv, r1 - r0, kv_dim);
    }
    if (op.qk_norm) {
      cpu::rms_norm(q, w.q_norm, q, (r1 - r0) * num_heads, head_dim, eps);
      cpu::rms_norm(k, w.k_norm, k, (r1 - r0) * num_kv_heads, head_dim, eps);
    }
    const float* cos_sin = table + r0 * (rope_dim / 2) * 2;
    cpu::rope_rotate(q, cos_sin, r1 - r0, num_heads, head_dim, rope_dim, config_.rope_layout);
    cpu::rope_rotate(k, cos_sin, r1 - r0, num_kv_heads, head_dim, rope_dim, config_.rope_layout);
    write_kv(static_cast<std::size_t>(op.layer), *step_, r0, r1);
  });
}

void CpuBackend::run(const OutputProjection& op) {
  const LayerWeights& w = layer_weights(op.layer);
  const auto q_dim = static_cast<std::size_t>(config_.num_heads * config_.head_dim);
  for_row_chunks(num_rows(), [&](std::size_t r0, std::size_t r1) { quantize_chunk(attn_.data(), r0, r1, q_dim); });
  matmuls(attn_.data(), num_rows(), q_dim,
          {{w.wo, w.packed.wo, w.half.wo, proj_.data(), static_cast<std::size_t>(config_.hidden_size)}});
}

void CpuBackend::run(const GatedActivation& op) {
  const LayerWeights& w = layer_weights(op.layer);
  const auto ffn = static_cast<std::size_t>(config_.intermediate_size);
  matmuls(xn_.data(), num_rows(), static_cast<std::size_t>(config_.hidden_size),
          {{w.w_gate, w.packed.w_gate, w.half.w_gate, gate_.data(), ffn},
           {w.w_up, w.packed.w_up, w.half.w_up, up_.data(), ffn}});
  for_row_chunks(num_rows(), [&](std::size_t r0, std::size_t r1) {
    cpu::gated_activation(op.activation, gate_.data() + r0 * ffn, up_.data() + r0 * ffn, gate_.data() + r0 * ffn,
                          (r1 - r0) * ffn);
    quantize_chunk(gate_.data(), r0, r1, ffn);
  });
}

void CpuBackend::run(const DownProjection& op) {
  const LayerWeights& w = layer_weights(op.layer);
  matmuls(gate_.data(), num_rows(), static_cast<std::size_t>(config_.intermediate_size),
          {{w.w_down, w.packed.w_down, w.half.w_down, proj_.data(), static_cast<std::size_t>(config_.hidden_size)}});
}

void CpuBackend::run(const Logits&) {
  matmuls(head_in_.data(), step_->logits_rows.size(), static_cast<std::size_t>(config_.hidden_size),
          {{weights_.output, weights_.output_packed, weights_.output_half, step_logits_.data(),
            static_cast<std::size_t>(config_.vocab_size)}});
}

void CpuBackend::run(const SoftCapLogits& op) {
  const auto vocab = static_cast<std::size_t>(config_.vocab_size);
  for_row_chunks(step_->logits_rows.size(), [&](std::size_t r0, std::size_t r1) {
    cpu::soft_cap(step_logits_.data() + r0 * vocab, (r1 - r0) * vocab, op.cap);
  });
}

const float* CpuBackend::norm_weight(NormWeight norm) const {
  if (norm.kind == NormKind::kOutput) return weights_.output_norm;
  return select_norm_weight(norm, weights_.output_norm, layer_weights(norm.layer));
}

void CpuBackend::check_weights(const LayerOp& op) const {
  if (const auto* norm = std::get_if<ResidualNorm>(&op)) {
    PG_CHECK(norm_weight(norm->norm) != nullptr && (!norm->delta_norm || norm_weight(*norm->delta_norm) != nullptr),
             "the {} layer program names a norm the weights lack", config_.architecture);
  } else if (const auto* qkv = std::get_if<QkvRopeKvWrite>(&op)) {
    const LayerWeights& w = layer_weights(qkv->layer);
    PG_CHECK((!qkv->bias || (w.bq != nullptr && w.bk != nullptr && w.bv != nullptr)) &&
                 (!qkv->qk_norm || (w.q_norm != nullptr && w.k_norm != nullptr)),
             "the {} layer program names QKV biases or q/k norms the weights lack", config_.architecture);
    PG_CHECK(qkv->rope == RopeTable::kFull || !weights_.rope_inv_freq_window.empty(),
             "the window layers' RoPE table is not loaded");
  }
}

}  // namespace pagedgen
