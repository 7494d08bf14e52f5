// The CPU backend on the paged KV cache: owns the K/V pool of every layer (float32, float16
// or bfloat16: kv_dtype.h) and runs
// the forward pass of a StepBatch (every architecture of model_config.h) with
// batch-invariant matrix products and paged
// attention (paged_attention.h), so a token's logits are the same bits however it is
// batched. Two kinds of matrix product, chosen by the weights' form (model_weights.h):
// float32 weights, and float16 / bfloat16 ones kept as stored, use the exact float GEMM
// (cpu_gemm.h); weights kept quantized use the int8 fast path (quant_gemm.h) on activations
// quantized per 32-value block. The forward pass is the model's layer program
// (model/layer_program.h), run op by op (cpu_backend_ops.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <initializer_list>
#include <memory>
#include <vector>

#include "backend/cpu_thread_pool.h"
#include "backend/host_sampling.h"
#include "backend/kv_layout.h"
#include "backend/kv_pool_shape.h"
#include "backend/logits_backend.h"
#include "cpu/cpu_isa.h"
#include "cpu/kv_dtype.h"
#include "cpu/q8_activations.h"
#include "model/layer_op.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "util/parallel_for.h"

namespace pagedgen {

class CpuBackend final : public LogitsBackend, private LayerOps {
 public:
  // `config` and `weights` must outlive the backend. `num_threads` counts the caller; `isa`
  // is the instruction set of the int8 kernels (any gives the same bits); `kv_dtype` the
  // element type of the KV pools.
  CpuBackend(const ModelConfig& config, const ModelWeights& weights, std::size_t num_threads = default_num_threads(),
             cpu::CpuIsa isa = cpu::best_cpu_isa(), KvDtype kv_dtype = KvDtype::kFloat32);

  std::string name() const override { return "cpu"; }
  std::size_t kv_bytes_per_block(std::size_t block_size) const override;
  // The model's kinds (ModelConfig::kv_kinds): full attention, then its window layers.
  std::vector<int32_t> kv_kind_windows() const override;
  std::size_t kv_kind_bytes_per_block(KvKindId kind, std::size_t block_size) const override;
  // The budget's blocks, refused up front when they need more memory than is available.
  int32_t kv_pool_blocks(const KvPoolBudget& budget, std::size_t block_size) const override;
  void allocate_kv_pool(std::size_t num_blocks, std::size_t block_size) override;
  void allocate_kv_pools(std::span<const int32_t> kind_num_blocks, std::size_t block_size) override;
  void forward(const StepBatch& batch, std::span<float> logits) override;
  int64_t vocab_size() const override { return config_.vocab_size; }
  // forward(), then each row sampled on the host, within its grammar's mask.
  std::vector<SampledToken> step(const StepBatch& batch, const SamplingBatch& sampling) override {
    return host_sampling_.step(*this, batch, sampling);
  }
  bool applies_token_masks() const override { return true; }
  bool applies_penalties() const override { return true; }
  bool computes_logprobs() const override { return true; }
  void copy_blocks(std::span<const BlockCopy> copies) override;

  std::size_t num_threads() const { return pool_.num_threads(); }
  KvLayout kv_layout(KvKindId kind = 0) const { return kv_shape_.layout(kind); }
  KvDtype kv_dtype() const { return kv_dtype_; }
  // One layer's K or V pool of a float32 KV cache, (num_blocks of its kind, num_kv_heads,
  // block_size, head_dim): for tests.
  std::span<float> k_pool(std::size_t layer) { return float_pool(k_pools_, layer); }
  std::span<float> v_pool(std::size_t layer) { return float_pool(v_pools_, layer); }
  std::span<const float> k_pool(std::size_t layer) const { return float_pool(k_pools_, layer); }
  std::span<const float> v_pool(std::size_t layer) const { return float_pool(v_pools_, layer); }

 private:
  // Every layer's pools, sized by its kind in `shape`.
  void allocate_pools(KvPoolShape shape);
  void ensure_activations(std::size_t num_tokens, std::size_t num_logits);
  // fn(row_begin, row_end) over [0, num_rows) in parallel chunks; rows are independent.
  template <typename Fn>
  void for_row_chunks(std::size_t num_rows, Fn&& fn) {
    // Few rows per chunk keeps both threads busy at decode; the split never changes a
    // result because the operations are row by row.
    constexpr std::size_t kRowsPerChunk = 8;
    pool_.run((num_rows + kRowsPerChunk - 1) / kRowsPerChunk, [&](std::size_t chunk, std::size_t) {
      const std::size_t begin = chunk * kRowsPerChunk;
      fn(begin, std::min(num_rows, begin + kRowsPerChunk));
    });
  }
  // Rows [r0, r1) of xq_ = those of x (rows, cols) quantized, when any of the matrices it
  // will meet is packed.
  void quantize_chunk(const float* x, std::size_t r0, std::size_t r1, std::size_t cols);
  // The step's RoPE rotations (rope_cos_sin_, and rope_cos_sin_window_ when the window
  // layers rotate otherwise), shared by every layer.
  void rope_rotations();
  std::size_t num_rows() const { return static_cast<std::size_t>(step_->num_tokens); }

  // The layer ops (model/layer_op.h), on the step in step_ (cpu_backend_ops.cpp).
  void run(const EmbedTokens& op) override;
  void run(const ResidualNorm& op) override;
  void run(const QkvProjection& op) override;
  void run(const QkvRopeKvWrite& op) override;
  void run(const Attention& op) override;
  void run(const OutputProjection& op) override;
  void run(const GatedActivation& op) override;
  void run(const DownProjection& op) override;
  void run(const Logits& op) override;
  void run(const SoftCapLogits& op) override;
  // Rows [r0, r1): x_ += proj_, post-normed first by `delta_norm` unless null.
  void add_delta(const float* delta_norm, std::size_t r0, std::size_t r1);
  // Rows [r0, r1): xn_ = rms_norm(x_) * weight, quantized into xq_.
  void norm_chunk(const float* weight, std::size_t r0, std::size_t r1);
  // The step's new K/V of tokens [r0, r1) into `layer`'s pools.
  void write_kv(std::size_t layer, const StepBatch& batch, std::size_t r0, std::size_t r1);
  // The weights an op names, and the check at construction that they are loaded.
  const float* norm_weight(NormWeight norm) const;
  const LayerWeights& layer_weights(int32_t index) const { return weights_.layers[static_cast<std::size_t>(index)]; }
  void check_weights(const LayerOp& op) const;
  // One matrix product of matmuls(): y (rows, out_features) = x @ w^T, w being `dense`,
  // `packed` or `half` (the others null).
  struct Product {
    const float* dense;
    const PackedMatrix* packed;
    const HalfMatrix* half;
    float* y;
    std::size_t out_features;
  };
  // Every product of x (rows, in_features); packed ones read xq_, which must hold x
  // quantized, and run in one parallel region.
  void matmuls(const float* x, std::size_t rows, std::size_t in_features, std::initializer_list<Product> products);

  const ModelConfig& config_;
  const ModelWeights& weights_;
  cpu::CpuThreadPool pool_;
  cpu::CpuIsa isa_;
  bool has_packed_ = false;  // some matrix is kept quantized: activations get quantized
  HostSampling host_sampling_;
  // The pools' kinds: kind 0 and the model's window kinds after allocate_kv_pools, kind 0
  // alone (every layer) after allocate_kv_pool.
  KvPoolShape kv_shape_;
  const KvLayout& layer_layout(std::size_t layer) const { return kv_shape_.layer_layout(layer); }
  std::span<float> float_pool(const std::vector<std::unique_ptr<std::byte[]>>& pools, std::size_t layer) const;

  KvDtype kv_dtype_;
  std::vector<LayerOp> program_;     // the forward pass (model/layer_program.h)
  bool window_rope_ = false;         // some layer rotates with rope_inv_freq_window
  const StepBatch* step_ = nullptr;  // the step forward() runs, while it runs
  std::span<float> step_logits_;     // (logits rows, vocab) its logits
  // Per layer: layer_layout(layer).elements_per_layer() values of kv_dtype_. Not zeroed: a slot is
  // always written before it is read, and pages nobody touched take no memory.
  std::vector<std::unique_ptr<std::byte[]>> k_pools_;
  std::vector<std::unique_ptr<std::byte[]>> v_pools_;

  // Activations, kept between steps and grown as needed.
  std::vector<float> x_;                    // (num_tokens, hidden) residual stream
  std::vector<float> xn_;                   // (num_tokens, hidden) normed input of a sub-block
  std::vector<float> q_;                    // (num_tokens, num_heads, head_dim)
  std::vector<float> k_;                    // (num_tokens, num_kv_heads, head_dim)
  std::vector<float> v_;                    // (num_tokens, num_kv_heads, head_dim)
  std::vector<float> attn_;                 // (num_tokens, num_heads, head_dim)
  std::vector<float> proj_;                 // (num_tokens, hidden)
  std::vector<float> gate_;                 // (num_tokens, intermediate)
  std::vector<float> up_;                   // (num_tokens, intermediate)
  std::vector<float> head_in_;              // (num_logits, hidden) final-normed rows that need logits
  std::vector<float> rope_cos_sin_;         // (tokens, rope_dim / 2, 2): the step's RoPE rotations
  std::vector<float> rope_cos_sin_window_;  // the same for the window layers when they rotate otherwise
  std::vector<cpu::Q8Block> xq_;            // the current matrix input quantized (fast path)
};

}  // namespace pagedgen
