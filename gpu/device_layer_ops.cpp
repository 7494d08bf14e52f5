#include "device_layer_ops.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "dtype_dispatch.h"
#include "fused_mlp_kernel.h"
#include "fused_mlp_plan.h"
#include "llama_kernels.h"
#include "paged_attention_kernel.h"
#include "tensor_attention_kernel.h"

namespace pagedgen::gpu {

namespace {

// The ops in the storage type T of the step's dtype (float, __half, __nv_bfloat16).
template <typename T>
class TypedLayerOps final : public LayerOps {
 public:
  explicit TypedLayerOps(const DeviceStep& step)
      : s_(step),
        b_(step.buffers),
        r_(step.rows),
        hidden_(static_cast<int32_t>(step.config.hidden_size)),
        q_dim_(static_cast<int32_t>(step.config.num_heads * step.config.head_dim)),
        kv_dim_(static_cast<int32_t>(step.config.num_kv_heads * step.config.head_dim)),
        ffn_(static_cast<int32_t>(step.config.intermediate_size)) {}

  void run(const EmbedTokens& op) override {
    launch_embedding_gather<T>(EmbeddingArgs<T>{static_cast<const T*>(s_.weights.token_embd), r_.token_ids,
                                                b_.x.as<float>(), r_.num_rows, hidden_, op.scale},
                               s_.stream);
  }

  // The rows of logits_rows only when the op says so, and then only when there are some.
  void run(const ResidualNorm& op) override {
    if (op.logits_rows && r_.num_logits == 0) return;
    launch_add_rms_norm<T>(
        RmsNormArgs<T>{b_.x.as<float>(), op.add_delta ? b_.delta.as<float>() : nullptr, norm_weight(op.norm),
                       op.logits_rows ? b_.head_in.as<T>() : b_.xn.as<T>(), op.logits_rows ? r_.logits_rows : nullptr,
                       op.logits_rows ? r_.num_logits : r_.num_rows, hidden_, s_.config.rms_norm_eps,
                       op.delta_norm ? norm_weight(*op.delta_norm) : nullptr},
        s_.stream);
  }

  void run(const QkvProjection& op) override {
    s_.gemm.run(b_.xn.data(), layer(op.layer).wqkv, b_.qkv.as<float>(), r_.num_rows, hidden_, q_dim_ + 2 * kv_dim_);
  }

  // The KV write is done by the RoPE kernel itself.
  void run(const QkvRopeKvWrite& op) override {
    const DeviceLayerWeights& lw = layer(op.layer);
    const auto l = static_cast<std::size_t>(op.layer);
    const ModelConfig& c = s_.config;
    const float* inv_freq = op.rope == RopeTable::kWindow ? s_.weights.window_rope_inv_freq : s_.weights.rope_inv_freq;
    launch_qkv_rope<T>(QkvRopeArgs{b_.qkv.as<float>(), op.bias ? lw.bqkv : nullptr, r_.positions, inv_freq,
                                   b_.q.as<float>(), b_.k.as<float>(), b_.v.as<float>(), r_.num_rows,
                                   static_cast<int32_t>(c.num_heads), static_cast<int32_t>(c.num_kv_heads),
                                   static_cast<int32_t>(c.head_dim), static_cast<int32_t>(c.rope_dim), c.rope_layout,
                                   op.qk_norm ? lw.q_norm : nullptr, op.qk_norm ? lw.k_norm : nullptr, c.rms_norm_eps},
                       KvWriteArgsOf<T>{b_.k.as<float>(), b_.v.as<float>(),
                                        r_.slots[static_cast<std::size_t>(s_.kv_pools.shape().layer_kind(l))],
                                        r_.num_rows, k_pool(l), v_pool(l), s_.kv_pools.shape().layer_layout(l)},
                       s_.stream);
  }

  // Attention of the batch's real tokens (never the padding), launched as the layer's plan
  // cuts it, over the block tables of the layer's kind.
  void run(const Attention& op) override {
    const auto l = static_cast<std::size_t>(op.layer);
    const auto kind = static_cast<std::size_t>(s_.kv_pools.shape().layer_kind(l));
    const StepBatch& batch = s_.batch;
    const AttentionArrays& a = s_.attention;
    const PagedAttentionArgsOf<T, T> args{b_.q.as<float>(),
                                          k_pool(l),
                                          v_pool(l),
                                          b_.attn.as<T>(),
                                          r_.positions,
                                          a.query_start,
                                          a.context_lens,
                                          a.block_tables[kind],
                                          batch.num_tokens,
                                          batch.num_seqs,
                                          batch.max_blocks_per_seq,
                                          static_cast<int32_t>(s_.config.num_heads),
                                          op.scale,
                                          s_.kv_pools.shape().layer_layout(l),
                                          op.window,
                                          op.softcap};
    if constexpr (!std::is_same_v<T, float>) {  // tensor cores: bfloat16 and float16 only
      if (s_.plans.tensor && op.window == 0) {
        launch_tensor_attention(
            args,
            TensorAttentionWork{a.tiles, static_cast<int32_t>(s_.plans.tensor->tiles.size()), a.tile_tokens,
                                a.num_parts, a.tile_partial_index, s_.plans.tensor->num_partials,
                                b_.partial_out.as<float>(), b_.partial_max.as<float>(), b_.partial_sum.as<float>()},
            s_.stream);
        return;
      }
    }
    const std::size_t p = op.window > 0 ? kWindowLayers : kFullLayers;
    for (const AttentionLaunch& launch : s_.plans.cuda_core[p].launches)
      launch_paged_attention(
          args,
          AttentionWork{a.items[p] + launch.item_begin, launch.item_end - launch.item_begin, launch.token_begin,
                        launch.token_end, a.partial_index[p], b_.partial_out.as<float>(), b_.partial_max.as<float>(),
                        b_.partial_sum.as<float>()},
          s_.stream);
  }

  void run(const OutputProjection& op) override {
    s_.gemm.run(b_.attn.data(), layer(op.layer).wo, b_.delta.as<float>(), r_.num_rows, q_dim_, hidden_);
  }

  // One fused kernel for steps of few rows in bfloat16/float16 (fused_mlp_plan.h), else the
  // GEMM into gate_up and the activation kernel.
  void run(const GatedActivation& op) override {
    const DeviceLayerWeights& lw = layer(op.layer);
    const bool fused = use_fused_mlp(s_.dtype, r_.num_rows, hidden_);
    if constexpr (!std::is_same_v<T, float>)
      if (fused)
        launch_fused_mlp<T>(FusedMlpArgs<T>{b_.xn.as<T>(), static_cast<const T*>(lw.w_gate_up), b_.act.as<T>(),
                                            r_.num_rows, hidden_, ffn_, op.activation},
                            s_.stream);
    if (!fused) {
      s_.gemm.run(b_.xn.data(), lw.w_gate_up, b_.gate_up.as<float>(), r_.num_rows, hidden_, 2 * ffn_);
      launch_gated_activation<T>(
          GatedActivationArgs<T>{b_.gate_up.as<float>(), b_.act.as<T>(), r_.num_rows, ffn_, op.activation}, s_.stream);
    }
  }

  void run(const DownProjection& op) override {
    s_.gemm.run(b_.act.data(), layer(op.layer).w_down, b_.delta.as<float>(), r_.num_rows, ffn_, hidden_);
  }

  void run(const Logits&) override {
    if (r_.num_logits == 0) return;
    s_.gemm.run(b_.head_in.data(), s_.weights.output, b_.logits.as<float>(), r_.num_logits, hidden_,
                s_.config.vocab_size);
  }

  void run(const SoftCapLogits& op) override {
    if (r_.num_logits == 0) return;
    launch_soft_cap(b_.logits.as<float>(), static_cast<int64_t>(r_.num_logits) * s_.config.vocab_size, op.cap,
                    s_.stream);
  }

 private:
  const DeviceLayerWeights& layer(int32_t l) const { return s_.weights.layers[static_cast<std::size_t>(l)]; }
  // The norm weight an op names (nullptr for a post norm the model lacks).
  const float* norm_weight(NormWeight norm) const {
    if (norm.kind == NormKind::kOutput) return s_.weights.output_norm;
    return select_norm_weight(norm, s_.weights.output_norm, layer(norm.layer));
  }
  // Layer l's K and V pools, of T (the pools' dtype is the step's).
  T* k_pool(std::size_t l) const { return static_cast<T*>(s_.kv_pools.k_pool(l)); }
  T* v_pool(std::size_t l) const { return static_cast<T*>(s_.kv_pools.v_pool(l)); }

  const DeviceStep& s_;
  const ActivationBuffers& b_;
  const RowArrays& r_;
  const int32_t hidden_, q_dim_, kv_dim_, ffn_;
};

}  // namespace

void with_device_layer_ops(const DeviceStep& step, const std::function<void(LayerOps&)>& body) {
  dispatch_dtype(step.dtype, [&]<typename T>(TypeTag<T>) {
    TypedLayerOps<T> ops(step);
    body(ops);
  });
}

}  // namespace pagedgen::gpu
