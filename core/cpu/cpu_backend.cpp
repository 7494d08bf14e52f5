#include "backend/kv_kind_sizes.h"
#include "cpu/cpu_backend.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "backend/activation_widths.h"
#include "backend/step_batch_check.h"
#include "cpu/cpu_gemm.h"
#include "cpu/cpu_ops.h"
#include "cpu/paged_attention.h"
#include "cpu/quant_gemm.h"
#include "model/layer_program.h"
#include "util/byte_units.h"
#include "util/error.h"
#include "util/system_memory.h"

namespace pagedgen {

namespace {

void grow(std::vector<float>& buffer, std::size_t size) {
  if (buffer.size() < size) buffer.resize(size);
}

}  // namespace

CpuBackend::CpuBackend(const ModelConfig& config, const ModelWeights& weights, std::size_t num_threads, cpu::CpuIsa isa,
                       KvDtype kv_dtype)
    : config_(config),
      weights_(weights),
      pool_(std::max<std::size_t>(1, num_threads)),
      isa_(isa),
      host_sampling_(&pool_),
      kv_dtype_(kv_dtype),
      program_(layer_program(config)) {
  PG_CHECK(weights.layers.size() == static_cast<std::size_t>(config.num_layers), "weights have {} layers, config {}",
           weights.layers.size(), config.num_layers);
  has_packed_ = weights.token_embd_packed != nullptr || weights.output_packed != nullptr;
  for (const LayerWeights& layer : weights.layers) {
    const PackedLayerWeights& p = layer.packed;
    for (const PackedMatrix* m : {p.wq, p.wk, p.wv, p.wo, p.w_gate, p.w_up, p.w_down})
      has_packed_ = has_packed_ || m != nullptr;
  }
  for (const LayerOp& op : program_) {
    check_weights(op);
    const auto* qkv = std::get_if<QkvRopeKvWrite>(&op);
    window_rope_ = window_rope_ || (qkv != nullptr && qkv->rope == RopeTable::kWindow);
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
                 "available; ask for less",
                 format_bytes(bytes), num_blocks, block_size, format_bytes(*available));
  return num_blocks;
}

void CpuBackend::allocate_kv_pool(std::size_t num_blocks, std::size_t block_size) {
  allocate_pools(KvPoolShape::one_kind(config_, num_blocks, block_size));
}

void CpuBackend::allocate_kv_pools(std::span<const int32_t> kind_num_blocks, std::size_t block_size) {
  allocate_pools(KvPoolShape::by_kind(config_, kind_num_blocks, block_size));
}

void CpuBackend::allocate_pools(KvPoolShape shape) {
  kv_shape_ = std::move(shape);
  k_pools_.clear();
  v_pools_.clear();
  for (std::size_t layer = 0; layer < kv_shape_.num_layers(); ++layer) {
    const std::size_t bytes =
        static_cast<std::size_t>(layer_layout(layer).elements_per_layer()) * kv_dtype_bytes(kv_dtype_);
    k_pools_.emplace_back(new std::byte[bytes]);
    v_pools_.emplace_back(new std::byte[bytes]);
  }
}

std::span<float> CpuBackend::float_pool(const std::vector<std::unique_ptr<std::byte[]>>& pools,
                                        std::size_t layer) const {
  PG_CHECK(kv_dtype_ == KvDtype::kFloat32, "the {} KV pools are not float32", kv_dtype_name(kv_dtype_));
  return {reinterpret_cast<float*>(pools.at(layer).get()),
          static_cast<std::size_t>(layer_layout(layer).elements_per_layer())};
}

void CpuBackend::ensure_activations(std::size_t num_tokens, std::size_t num_logits) {
  const auto [hidden, q_dim, kv_dim, ffn] = activation_widths(config_);
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
  check_step_batch(batch, kv_shape_.layouts(), config_.vocab_size, logits.size());
  if (batch.num_tokens == 0) return;
  ensure_activations(static_cast<std::size_t>(batch.num_tokens), batch.logits_rows.size());
  step_ = &batch;
  step_logits_ = logits;
  rope_rotations();
  run_layer_ops(program_, *this);
  step_ = nullptr;
}

void CpuBackend::rope_rotations() {
  // The RoPE rotations of the step's positions, used by every layer (the window layers
  // have their own when they rotate otherwise).
  const std::size_t num_pairs = static_cast<std::size_t>(config_.rope_dim) / 2;
  const std::span<const int32_t> positions(step_->positions);
  grow(rope_cos_sin_, positions.size() * num_pairs * 2);
  if (window_rope_) grow(rope_cos_sin_window_, positions.size() * num_pairs * 2);
  for_row_chunks(positions.size(), [&](std::size_t r0, std::size_t r1) {
    cpu::rope_rotations(positions.subspan(r0, r1 - r0), std::span(weights_.rope_inv_freq).first(num_pairs),
                        rope_cos_sin_.data() + r0 * num_pairs * 2);
    if (window_rope_)
      cpu::rope_rotations(positions.subspan(r0, r1 - r0), std::span(weights_.rope_inv_freq_window).first(num_pairs),
                          rope_cos_sin_window_.data() + r0 * num_pairs * 2);
  });
}

void CpuBackend::write_kv(std::size_t layer, const StepBatch& batch, std::size_t r0, std::size_t r1) {
  const auto kv_dim = static_cast<std::size_t>(config_.num_kv_heads * config_.head_dim);
  auto write = [&](auto* k_pool, auto* v_pool) {
    auto args = cpu::kv_write_args(batch, k_.data(), v_.data(), k_pool, v_pool, layer_layout(layer));
    args.k += r0 * kv_dim;
    args.v += r0 * kv_dim;
    args.slot_mapping = batch.kind_slot_mapping(kv_shape_.layer_kind(layer)).data() + r0;
    args.num_tokens = static_cast<int32_t>(r1 - r0);
    cpu::write_kv_cache(args);
  };
  std::byte* k_pool = k_pools_[layer].get();
  std::byte* v_pool = v_pools_[layer].get();
  switch (kv_dtype_) {
    case KvDtype::kFloat32:
      write(reinterpret_cast<float*>(k_pool), reinterpret_cast<float*>(v_pool));
      break;
    case KvDtype::kFloat16:
      write(reinterpret_cast<Float16*>(k_pool), reinterpret_cast<Float16*>(v_pool));
      break;
    case KvDtype::kBFloat16:
      write(reinterpret_cast<BFloat16*>(k_pool), reinterpret_cast<BFloat16*>(v_pool));
      break;
  }
}

// The Attention op (model/layer_op.h) here, beside the pools it reads.
void CpuBackend::run(const Attention& op) {
  const auto layer = static_cast<std::size_t>(op.layer);
  const StepBatch& batch = *step_;
  auto attend = [&](const auto* k_pool, const auto* v_pool) {
    auto args = cpu::paged_attention_args(batch, q_.data(), static_cast<int32_t>(config_.num_heads), k_pool, v_pool,
                                          layer_layout(layer), op.scale, attn_.data(), op.window, op.softcap);
    args.block_tables = batch.kind_block_tables(kv_shape_.layer_kind(layer)).data();
    cpu::paged_attention(args, pool_);
  };
  const std::byte* k_pool = k_pools_[layer].get();
  const std::byte* v_pool = v_pools_[layer].get();
  switch (kv_dtype_) {
    case KvDtype::kFloat32:
      attend(reinterpret_cast<const float*>(k_pool), reinterpret_cast<const float*>(v_pool));
      break;
    case KvDtype::kFloat16:
      attend(reinterpret_cast<const Float16*>(k_pool), reinterpret_cast<const Float16*>(v_pool));
      break;
    case KvDtype::kBFloat16:
      attend(reinterpret_cast<const BFloat16*>(k_pool), reinterpret_cast<const BFloat16*>(v_pool));
      break;
  }
}

void CpuBackend::copy_blocks(std::span<const BlockCopy> copies) {
  const std::size_t element_bytes = kv_dtype_bytes(kv_dtype_);
  // In order: a copy may read a block an earlier one wrote.
  for (const BlockCopy& copy : kv_shape_.moving_copies(copies)) {
    const KvLayout& layout = kv_shape_.layout(copy.kind);
    const std::size_t block_bytes = static_cast<std::size_t>(layout.block_stride()) * element_bytes;
    const std::size_t src = static_cast<std::size_t>(layout.offset(copy.src, 0, 0, 0)) * element_bytes;
    const std::size_t dst = static_cast<std::size_t>(layout.offset(copy.dst, 0, 0, 0)) * element_bytes;
    for (std::size_t layer = 0; layer < k_pools_.size(); ++layer) {
      if (kv_shape_.layer_kind(layer) != copy.kind) continue;
      std::memcpy(k_pools_[layer].get() + dst, k_pools_[layer].get() + src, block_bytes);
      std::memcpy(v_pools_[layer].get() + dst, v_pools_[layer].get() + src, block_bytes);
    }
  }
}

}  // namespace pagedgen
