#include "cuda_backend.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <optional>
#include <type_traits>
#include <unordered_set>

#include "attention_plan.h"
#include "backend/kv_kind_sizes.h"
#include "backend/step_batch_check.h"
#include "cuda_check.h"
#include "cuda_gemm.h"
#include "decode_graphs.h"
#include "overlap_tokens_kernel.h"
#include "device_buffer.h"
#include "device_sampler.h"
#include "device_weights.h"
#include "dtype_dispatch.h"
#include "fused_mlp_kernel.h"
#include "fused_mlp_plan.h"
#include "kv_cache_kernels.h"
#include "llama_kernels.h"
#include "model/layer_program.h"
#include "paged_attention_kernel.h"
#include "staged_upload.h"
#include "step_profiler.h"
#include "tensor_attention_kernel.h"
#include "tensor_attention_plan.h"
#include "util/byte_units.h"
#include "util/error.h"

namespace pagedgen::gpu {

namespace {

// Partial attention results of one launch (attention_plan.h): enough for decode at batch
// 256 over 4k-token contexts with an 8B model; longer steps take several launches.
constexpr std::size_t kPartialWorkspaceBytes = std::size_t{64} << 20;

// Cascade decode (bfloat16 and float16, kCascadePolicy in tensor_attention_plan.h): in
// parts of 512 positions (more when the partials would not fit). Chosen, not measured yet.
constexpr int32_t kCascadeChunkTokens = 512;

// Layer kinds of the KV cache (step/kv_kinds.h): the full-attention layers and at most one
// sliding window, since a model has one window size (ModelConfig::sliding_window).
constexpr std::size_t kMaxKvKinds = 2;

// The CUDA-core attention plans of a step, by the layers' window: kFullLayers for the
// layers that attend to every position, kWindowLayers for those with a sliding window.
enum AttentionPlanIndex : std::size_t { kFullLayers = 0, kWindowLayers = 1 };

// Where one step's attention arrays sit in its uploaded pack (byte offsets).
struct AttentionArrays {
  const std::byte* base;
  std::size_t query_start, context_lens;
  std::array<std::size_t, kMaxKvKinds> block_tables;              // by layer kind
  std::array<std::size_t, 2> items, partial_index;                // AttentionPlan, by AttentionPlanIndex
  std::size_t tiles, tile_tokens, num_parts, tile_partial_index;  // TensorAttentionPlan
  template <typename A>
  const A* at(std::size_t offset) const {
    return reinterpret_cast<const A*>(base + offset);
  }
};

}  // namespace

struct CudaBackend::Impl {
  const ModelConfig& config;
  CudaBackendOptions options;
  cudaStream_t stream = nullptr;
  std::optional<DeviceWeights> weights;
  std::optional<CudaGemm> gemm;
  // The KV pools, one allocation grouped by layer kind: kind 0's layers (in layer order, K
  // then V of each), then kind 1's; each pool of kind k holds layouts[k].elements_per_layer().
  std::vector<KvLayout> layouts;               // by kind
  std::vector<KvKindId> layer_kinds;           // by layer
  std::vector<std::size_t> layer_pool_offset;  // by layer: elements from kv_pool to its K pool (V follows)
  std::vector<std::size_t> kind_pool_offset;   // by kind: elements from kv_pool to its first pool
  DeviceBuffer kv_pool;

  // Activations, per token row (float32 unless the dtype is named):
  std::size_t token_capacity = 0;
  DeviceBuffer x;        // (tokens, hidden) residual stream
  DeviceBuffer xn;       // (tokens, hidden) dtype: normed GEMM input
  DeviceBuffer qkv;      // (tokens, q_dim + 2 * kv_dim) fused QKV GEMM output
  DeviceBuffer q;        // (tokens, q_dim) after RoPE
  DeviceBuffer k;        // (tokens, kv_dim) after RoPE
  DeviceBuffer v;        // (tokens, kv_dim)
  DeviceBuffer attn;     // (tokens, q_dim) dtype: attention output, the wo GEMM input
  DeviceBuffer delta;    // (tokens, hidden) a sub-block's output, added to x by the next norm
  DeviceBuffer gate_up;  // (tokens, 2 * ffn) fused gate/up GEMM output
  DeviceBuffer act;      // (tokens, ffn) dtype: silu(gate) * up, the w_down GEMM input
  // ... per logits row:
  std::size_t logits_capacity = 0;
  DeviceBuffer head_in;  // (rows, hidden) dtype: final-normed rows
  DeviceBuffer logits;   // (rows, vocab)
  // Attention partials (paged_attention_kernel.h), and the step's arrays.
  int64_t max_partials = 0;
  DeviceBuffer partial_out;  // [max_partials][num_heads][head_dim]
  DeviceBuffer partial_max;  // [max_partials][num_heads]
  DeviceBuffer partial_sum;  // [max_partials][num_heads]
  StagedUpload step_arrays;
  DeviceSampler sampler;
  // Decode steps (decode_graphs.h): their token-row arrays, padded to the bucket, at
  // addresses the graphs keep; the graphs; and a count bumped whenever an address a graph
  // reads moves (activations, the KV pool).
  StagedUpload decode_rows;
  DecodeGraphs graphs;
  uint64_t num_buffer_moves = 0;
  std::vector<int32_t> padded_ids, padded_positions, padded_logits_rows;  // scratch
  std::array<std::vector<int64_t>, kMaxKvKinds> padded_slots;
  int32_t num_in_flight = 0;             // steps submitted, not collected
  std::optional<StepProfiler> profiler;  // with PAGEDGEN_GPU_PROFILE=1 only

  // The forward pass (model/layer_program.h) and where its Attention ops sit in it: the
  // graph segments of a decode step are the ops between them (decode_graphs.h).
  std::vector<LayerOp> program;
  std::vector<std::size_t> attention_ops;
  // From the Attention ops: whether some layer attends to every position (all but a model
  // whose every layer has a window), the window of those that have one (0: none), and
  // whether scores are soft-capped: which attention plans a step needs.
  bool has_full_layers = false;
  int32_t window = 0;
  bool scores_softcapped = false;

  Impl(const ModelConfig& c, const CudaBackendOptions& o) : config(c), options(o), program(layer_program(c)) {
    CudaBackend::check_supported(c);
    for (std::size_t i = 0; i < program.size(); ++i) {
      const auto* a = std::get_if<Attention>(&program[i]);
      if (a == nullptr) continue;
      attention_ops.push_back(i);
      has_full_layers = has_full_layers || a->window == 0;
      window = std::max(window, a->window);
      scores_softcapped = scores_softcapped || a->softcap != 0.0f;
    }
    CUDA_CHECK(cudaSetDevice(o.device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    gemm.emplace(stream, o.dtype);
    if (StepProfiler::requested()) profiler.emplace(stream);
  }

  ~Impl() {
    if (stream != nullptr) cudaStreamSynchronize(stream);
    if (profiler) {
      try {
        fmt::print(stderr, "{}", profiler->summary());
      } catch (...) {  // stderr gone: nothing to report to
      }
      profiler.reset();
    }
    gemm.reset();
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  std::size_t dtype_bytes() const { return device_dtype_bytes(options.dtype); }

  void allocate_workspaces() {
    ensure_activations(static_cast<std::size_t>(std::max(1, options.max_batch_tokens)),
                       static_cast<std::size_t>(std::max(1, options.max_logits_rows)));
    const auto heads = static_cast<std::size_t>(config.num_heads);
    const auto head_dim = static_cast<std::size_t>(config.head_dim);
    const std::size_t bytes_per_partial = heads * (head_dim + 2) * sizeof(float);
    const int32_t group = static_cast<int32_t>(config.num_heads / config.num_kv_heads);
    const int64_t one_tile = int64_t{attention_queries_per_item(group)} *
                             attention_partitions(static_cast<int32_t>(config.context_length - 1));
    max_partials = std::max<int64_t>(static_cast<int64_t>(kPartialWorkspaceBytes / bytes_per_partial), one_tile);
    const auto n = static_cast<std::size_t>(max_partials);
    partial_out = DeviceBuffer(n * heads * head_dim * sizeof(float));
    partial_max = DeviceBuffer(n * heads * sizeof(float));
    partial_sum = DeviceBuffer(n * heads * sizeof(float));
  }

  void ensure_activations(std::size_t num_tokens, std::size_t num_logits) {
    const auto hidden = static_cast<std::size_t>(config.hidden_size);
    const auto q_dim = static_cast<std::size_t>(config.num_heads * config.head_dim);
    const auto kv_dim = static_cast<std::size_t>(config.num_kv_heads * config.head_dim);
    const auto ffn = static_cast<std::size_t>(config.intermediate_size);
    const std::size_t f = sizeof(float);
    const std::size_t t = dtype_bytes();
    if (num_tokens > token_capacity || num_logits > logits_capacity) {
      CUDA_CHECK(cudaStreamSynchronize(stream));  // queued kernels may still read the old buffers
      ++num_buffer_moves;
    }
    if (num_tokens > token_capacity) {
      const std::size_t n = num_tokens;
      x = DeviceBuffer(n * hidden * f);
      xn = DeviceBuffer(n * hidden * t);
      qkv = DeviceBuffer(n * (q_dim + 2 * kv_dim) * f);
      q = DeviceBuffer(n * q_dim * f);
      k = DeviceBuffer(n * kv_dim * f);
      v = DeviceBuffer(n * kv_dim * f);
      attn = DeviceBuffer(n * q_dim * t);
      delta = DeviceBuffer(n * hidden * f);
      gate_up = DeviceBuffer(n * 2 * ffn * f);
      act = DeviceBuffer(n * ffn * t);
      token_capacity = n;
    }
    if (num_logits > logits_capacity) {
      head_in = DeviceBuffer(num_logits * hidden * t);
      logits = DeviceBuffer(num_logits * static_cast<std::size_t>(config.vocab_size) * f);
      logits_capacity = num_logits;
    }
  }

  std::size_t activation_bytes() const {
    std::size_t bytes =
        gemm->workspace_bytes() + step_arrays.device_bytes() + decode_rows.device_bytes() + sampler.device_bytes();
    for (const DeviceBuffer* b : {&x, &xn, &qkv, &q, &k, &v, &attn, &delta, &gate_up, &act, &head_in, &logits,
                                  &partial_out, &partial_max, &partial_sum})
      bytes += b->bytes();
    return bytes;
  }

  const KvLayout& layer_layout(std::size_t l) const { return layouts[static_cast<std::size_t>(layer_kinds[l])]; }
  template <typename T>
  T* k_pool(std::size_t l) const {
    return kv_pool.as<T>() + layer_pool_offset[l];
  }
  template <typename T>
  T* v_pool(std::size_t l) const {
    return k_pool<T>(l) + static_cast<std::size_t>(layer_layout(l).elements_per_layer());
  }
  void allocate_pools(std::span<const int32_t> kind_num_blocks, std::size_t block_size);

  // Checks the batch, then queues its forward pass on `stream`: the logits of
  // batch.logits_rows end up in `logits` (rows, vocab) on the device. `overlap_tokens` input
  // tokens are read from the ids the sampler gave last.
  void queue_forward(const StepBatch& batch, std::size_t logits_size, std::span<const OverlapToken> overlap_tokens) {
    PG_CHECK(kv_pool.bytes() > 0, "a step before allocate_kv_pool");
    check_step_batch(batch, layouts, config.vocab_size, logits_size);
    if (batch.num_tokens == 0) return;
    dispatch_dtype(options.dtype, [&]<typename T>(TypeTag<T>) { forward<T>(batch, overlap_tokens); });
  }

  // A decode step: one new token per sequence, each sampled, no more sequences than the
  // largest bucket. It runs padded to its bucket (with graphs on or off, so that both run
  // the same GEMM shapes and give the same bits).
  bool is_decode_step(const StepBatch& batch) const {
    return batch.num_tokens == batch.num_seqs && std::ssize(batch.logits_rows) == batch.num_tokens &&
           batch.num_tokens <= decode_bucket(std::max(1, options.max_logits_rows));
  }

  // Runs `queue` (launches on the stream) as one piece of the step being profiled.
  template <typename F>
  void profiled(ProfiledPiece kind, F&& queue) {
    if (profiler) profiler->begin_piece(kind);
    queue();
    if (profiler) profiler->end_piece();
  }

  // Where the kernels outside attention read a step's token rows on the device.
  struct RowArrays {
    int32_t* token_ids;                             // [num_rows]
    const int32_t* positions;                       // [num_rows]
    std::array<const int64_t*, kMaxKvKinds> slots;  // by layer kind: [num_rows], -1 for padding
    const int32_t* logits_rows;                     // [num_logits]
    int32_t num_rows;                               // the batch's tokens, or a decode step's bucket
    int32_t num_logits;
  };
  // A decode step's token rows padded to `bucket` (token 0 at position 0, no slot; every
  // row's logits), uploaded to decode_rows.
  RowArrays upload_decode_rows(const StepBatch& batch, int32_t bucket);

  template <typename T>
  void forward(const StepBatch& batch, std::span<const OverlapToken> overlap_tokens);
  // The norm weight an op names (nullptr for a post norm the model lacks).
  const float* norm_weight(NormWeight norm) const;
  // The layer ops of one step, in the dtype T.
  template <typename T>
  struct StepOps;
};

CudaBackend::Impl::RowArrays CudaBackend::Impl::upload_decode_rows(const StepBatch& batch, int32_t bucket) {
  const auto n = static_cast<std::size_t>(batch.num_tokens);
  const auto b = static_cast<std::size_t>(bucket);
  padded_ids.assign(batch.token_ids.begin(), batch.token_ids.end());
  padded_ids.resize(b, 0);
  padded_positions.assign(batch.positions.begin(), batch.positions.end());
  padded_positions.resize(b, 0);
  for (std::size_t kind = 0; kind < layouts.size(); ++kind) {
    const std::span<const int64_t> slots = batch.kind_slot_mapping(static_cast<KvKindId>(kind));
    padded_slots[kind].assign(slots.begin(), slots.end());
    padded_slots[kind].resize(b, -1);
  }
  padded_logits_rows.resize(b);
  for (std::size_t i = 0; i < b; ++i) padded_logits_rows[i] = static_cast<int32_t>(i);
  PG_CHECK(n <= b && std::equal(batch.logits_rows.begin(), batch.logits_rows.end(), padded_logits_rows.begin()),
           "decode step of {} tokens in a bucket of {}", n, b);
  ArrayPack pack;
  const std::size_t at_ids = pack.add(std::span<const int32_t>(padded_ids));
  const std::size_t at_positions = pack.add(std::span<const int32_t>(padded_positions));
  std::array<std::size_t, kMaxKvKinds> at_slots{};
  for (std::size_t kind = 0; kind < layouts.size(); ++kind)
    at_slots[kind] = pack.add(std::span<const int64_t>(padded_slots[kind]));
  const std::size_t at_logits_rows = pack.add(std::span<const int32_t>(padded_logits_rows));
  std::byte* d = decode_rows.upload(pack, stream);
  RowArrays r{reinterpret_cast<int32_t*>(d + at_ids),
              reinterpret_cast<const int32_t*>(d + at_positions),
              {},
              reinterpret_cast<const int32_t*>(d + at_logits_rows),
              bucket,
              bucket};
  for (std::size_t kind = 0; kind < layouts.size(); ++kind)
    r.slots[kind] = reinterpret_cast<const int64_t*>(d + at_slots[kind]);
  return r;
}

// The layer ops (model/layer_op.h) of one step on the device: each op's kernels or GEMM on
// the activations of Impl, for the step's rows r (a decode step's padded bucket).
template <typename T>
struct CudaBackend::Impl::StepOps final : LayerOps {
  Impl& m;
  const StepBatch& batch;
  const std::array<AttentionPlan, 2>& plans;
  const std::optional<TensorAttentionPlan>& tensor;
  const RowArrays& r;
  const AttentionArrays& arrays;
  const int32_t hidden, q_dim, kv_dim, ffn;

  StepOps(Impl& impl, const StepBatch& b, const std::array<AttentionPlan, 2>& p,
          const std::optional<TensorAttentionPlan>& t, const RowArrays& rows, const AttentionArrays& a)
      : m(impl),
        batch(b),
        plans(p),
        tensor(t),
        r(rows),
        arrays(a),
        hidden(static_cast<int32_t>(impl.config.hidden_size)),
        q_dim(static_cast<int32_t>(impl.config.num_heads * impl.config.head_dim)),
        kv_dim(static_cast<int32_t>(impl.config.num_kv_heads * impl.config.head_dim)),
        ffn(static_cast<int32_t>(impl.config.intermediate_size)) {}

  const DeviceLayerWeights& layer(int32_t l) const { return m.weights->layers[static_cast<std::size_t>(l)]; }

  void run(const EmbedTokens& op) override {
    launch_embedding_gather<T>(EmbeddingArgs<T>{static_cast<const T*>(m.weights->token_embd), r.token_ids,
                                                m.x.as<float>(), r.num_rows, hidden, op.scale},
                               m.stream);
  }

  // The rows of logits_rows only when the op says so, and then only when there are some.
  void run(const ResidualNorm& op) override {
    if (op.logits_rows && r.num_logits == 0) return;
    launch_add_rms_norm<T>(
        RmsNormArgs<T>{m.x.as<float>(), op.add_delta ? m.delta.as<float>() : nullptr, m.norm_weight(op.norm),
                       op.logits_rows ? m.head_in.as<T>() : m.xn.as<T>(), op.logits_rows ? r.logits_rows : nullptr,
                       op.logits_rows ? r.num_logits : r.num_rows, hidden, m.config.rms_norm_eps,
                       op.delta_norm ? m.norm_weight(*op.delta_norm) : nullptr},
        m.stream);
  }

  void run(const QkvProjection& op) override {
    m.gemm->run(m.xn.data(), layer(op.layer).wqkv, m.qkv.as<float>(), r.num_rows, hidden, q_dim + 2 * kv_dim);
  }

  // The KV write is done by the RoPE kernel itself.
  void run(const QkvRopeKvWrite& op) override {
    const DeviceLayerWeights& lw = layer(op.layer);
    const auto l = static_cast<std::size_t>(op.layer);
    const ModelConfig& c = m.config;
    const float* inv_freq = op.rope == RopeTable::kWindow ? m.weights->window_rope_inv_freq : m.weights->rope_inv_freq;
    launch_qkv_rope<T>(
        QkvRopeArgs{m.qkv.as<float>(), op.bias ? lw.bqkv : nullptr, r.positions, inv_freq, m.q.as<float>(),
                    m.k.as<float>(), m.v.as<float>(), r.num_rows, static_cast<int32_t>(c.num_heads),
                    static_cast<int32_t>(c.num_kv_heads), static_cast<int32_t>(c.head_dim),
                    static_cast<int32_t>(c.rope_dim), c.rope_layout, op.qk_norm ? lw.q_norm : nullptr,
                    op.qk_norm ? lw.k_norm : nullptr, c.rms_norm_eps},
        KvWriteArgsOf<T>{m.k.as<float>(), m.v.as<float>(), r.slots[static_cast<std::size_t>(m.layer_kinds[l])],
                         r.num_rows, m.k_pool<T>(l), m.v_pool<T>(l), m.layer_layout(l)},
        m.stream);
  }

  // Attention of the batch's real tokens (never the padding), launched as the layer's plan
  // cuts it, over the block tables of the layer's kind.
  void run(const Attention& op) override {
    const auto l = static_cast<std::size_t>(op.layer);
    const auto kind = static_cast<std::size_t>(m.layer_kinds[l]);
    const PagedAttentionArgsOf<T, T> args{m.q.as<float>(),
                                          m.k_pool<T>(l),
                                          m.v_pool<T>(l),
                                          m.attn.as<T>(),
                                          r.positions,
                                          arrays.at<int32_t>(arrays.query_start),
                                          arrays.at<int32_t>(arrays.context_lens),
                                          arrays.at<int32_t>(arrays.block_tables[kind]),
                                          batch.num_tokens,
                                          batch.num_seqs,
                                          batch.max_blocks_per_seq,
                                          static_cast<int32_t>(m.config.num_heads),
                                          op.scale,
                                          m.layer_layout(l),
                                          op.window,
                                          op.softcap};
    if constexpr (!std::is_same_v<T, float>) {
      if (tensor && op.window == 0) {
        launch_tensor_attention(
            args,
            TensorAttentionWork{arrays.at<TensorAttentionTile>(arrays.tiles),
                                static_cast<int32_t>(tensor->tiles.size()), arrays.at<int32_t>(arrays.tile_tokens),
                                arrays.at<int32_t>(arrays.num_parts), arrays.at<int32_t>(arrays.tile_partial_index),
                                tensor->num_partials, m.partial_out.as<float>(), m.partial_max.as<float>(),
                                m.partial_sum.as<float>()},
            m.stream);
        return;
      }
    }
    const std::size_t p = op.window > 0 ? kWindowLayers : kFullLayers;
    for (const AttentionLaunch& launch : plans[p].launches)
      launch_paged_attention(args,
                             AttentionWork{arrays.at<AttentionWorkItem>(arrays.items[p]) + launch.item_begin,
                                           launch.item_end - launch.item_begin, launch.token_begin, launch.token_end,
                                           arrays.at<int32_t>(arrays.partial_index[p]), m.partial_out.as<float>(),
                                           m.partial_max.as<float>(), m.partial_sum.as<float>()},
                             m.stream);
  }

  void run(const OutputProjection& op) override {
    m.gemm->run(m.attn.data(), layer(op.layer).wo, m.delta.as<float>(), r.num_rows, q_dim, hidden);
  }

  // One fused kernel for steps of few rows in bfloat16/float16 (fused_mlp_plan.h), else the
  // GEMM into gate_up and the activation kernel.
  void run(const GatedActivation& op) override {
    const DeviceLayerWeights& lw = layer(op.layer);
    const bool fused = use_fused_mlp(m.options.dtype, r.num_rows, hidden);
    if constexpr (!std::is_same_v<T, float>)
      if (fused)
        launch_fused_mlp<T>(FusedMlpArgs<T>{m.xn.as<T>(), static_cast<const T*>(lw.w_gate_up), m.act.as<T>(),
                                            r.num_rows, hidden, ffn, op.activation},
                            m.stream);
    if (!fused) {
      m.gemm->run(m.xn.data(), lw.w_gate_up, m.gate_up.as<float>(), r.num_rows, hidden, 2 * ffn);
      launch_gated_activation<T>(
          GatedActivationArgs<T>{m.gate_up.as<float>(), m.act.as<T>(), r.num_rows, ffn, op.activation}, m.stream);
    }
  }

  void run(const DownProjection& op) override {
    m.gemm->run(m.act.data(), layer(op.layer).w_down, m.delta.as<float>(), r.num_rows, ffn, hidden);
  }

  void run(const Logits&) override {
    if (r.num_logits == 0) return;
    m.gemm->run(m.head_in.data(), m.weights->output, m.logits.as<float>(), r.num_logits, hidden, m.config.vocab_size);
  }

  void run(const SoftCapLogits& op) override {
    if (r.num_logits == 0) return;
    launch_soft_cap(m.logits.as<float>(), static_cast<int64_t>(r.num_logits) * m.config.vocab_size, op.cap, m.stream);
  }
};

// The layer program as segments between its Attention ops (decode_graphs.h): segment 0
// is the embedding and layer 0 up to attention; segment l + 1 the rest of layer l and
// layer l + 1 up to attention (for the last layer, the final norm and the LM head).
template <typename T>
void CudaBackend::Impl::forward(const StepBatch& batch, std::span<const OverlapToken> overlap_tokens) {
  const int32_t n = batch.num_tokens;
  const auto num_logits = static_cast<int32_t>(batch.logits_rows.size());
  const bool decode = is_decode_step(batch);
  const int32_t bucket = decode ? decode_bucket(n) : 0;
  ensure_activations(static_cast<std::size_t>(decode ? bucket : n),
                     static_cast<std::size_t>(decode ? bucket : num_logits));
  const auto heads = static_cast<int32_t>(config.num_heads);
  const auto kv_heads = static_cast<int32_t>(config.num_kv_heads);

  // bfloat16 and float16 prefill (and cascade decode) of the full-attention layers on tensor
  // cores; float32, the window layers, soft-capped scores, head dims the tensor kernel lacks,
  // and decode steps without a shared prefix that pays, on the CUDA-core kernel (a plan per
  // window: kFullLayers, kWindowLayers).
  const int32_t group = heads / kv_heads;
  std::optional<TensorAttentionPlan> tensor;
  if constexpr (!std::is_same_v<T, float>)
    if (has_full_layers && !scores_softcapped && tensor_attention_supports_head_dim(config.head_dim))
      tensor = plan_tensor_attention(batch, group, kCascadePolicy, kCascadeChunkTokens, max_partials);
  std::array<AttentionPlan, 2> plans;
  if (has_full_layers && !tensor) plans[kFullLayers] = plan_attention(batch, group, max_partials, 0);
  if (window > 0) plans[kWindowLayers] = plan_attention(batch, group, max_partials, window);
  ArrayPack pack;
  std::size_t at_token_ids = 0, at_positions = 0, at_logits_rows = 0;
  std::array<std::size_t, kMaxKvKinds> at_slots{};
  if (!decode) {
    at_token_ids = pack.add(std::span(batch.token_ids));
    at_positions = pack.add(std::span(batch.positions));
    for (std::size_t kind = 0; kind < layouts.size(); ++kind)
      at_slots[kind] = pack.add(batch.kind_slot_mapping(static_cast<KvKindId>(kind)));
    at_logits_rows = pack.add(std::span(batch.logits_rows));
  }
  AttentionArrays attention_arrays{};
  attention_arrays.query_start = pack.add(std::span(batch.query_start));
  attention_arrays.context_lens = pack.add(std::span(batch.context_lens));
  for (std::size_t kind = 0; kind < layouts.size(); ++kind)
    attention_arrays.block_tables[kind] = pack.add(batch.kind_block_tables(static_cast<KvKindId>(kind)));
  for (std::size_t i = 0; i < plans.size(); ++i) {
    attention_arrays.items[i] = pack.add(std::span<const AttentionWorkItem>(plans[i].items));
    attention_arrays.partial_index[i] = pack.add(std::span<const int32_t>(plans[i].partial_index));
  }
  if (tensor) {
    attention_arrays.tiles = pack.add(std::span<const TensorAttentionTile>(tensor->tiles));
    attention_arrays.tile_tokens = pack.add(std::span<const int32_t>(tensor->tile_tokens));
    attention_arrays.num_parts = pack.add(std::span<const int32_t>(tensor->num_parts));
    attention_arrays.tile_partial_index = pack.add(std::span<const int32_t>(tensor->partial_index));
  }
  const std::size_t at_overlap_tokens = pack.add(overlap_tokens);
  // The first profiled piece: the uploads, the overlap tokens and segment 0.
  if (profiler) profiler->begin_piece(ProfiledPiece::kForward);
  std::byte* device_arrays = step_arrays.upload(pack, stream);
  attention_arrays.base = device_arrays;
  RowArrays r{};
  if (decode) {
    r = upload_decode_rows(batch, bucket);
  } else {
    r = RowArrays{reinterpret_cast<int32_t*>(device_arrays + at_token_ids),
                  reinterpret_cast<const int32_t*>(device_arrays + at_positions),
                  {},
                  reinterpret_cast<const int32_t*>(device_arrays + at_logits_rows),
                  n,
                  num_logits};
    for (std::size_t kind = 0; kind < layouts.size(); ++kind)
      r.slots[kind] = reinterpret_cast<const int64_t*>(device_arrays + at_slots[kind]);
  }
  if (!overlap_tokens.empty())
    launch_fill_overlap_tokens(
        OverlapTokenArgs{reinterpret_cast<const OverlapToken*>(device_arrays + at_overlap_tokens),
                         static_cast<int32_t>(overlap_tokens.size()), sampler.last_device_tokens(), r.token_ids},
        stream);

  const uint64_t buffers = num_buffer_moves + decode_rows.device_generation();
  const auto segment = [&](int32_t index, const std::function<void()>& queue) {
    if (decode && options.cuda_graphs)
      graphs.run(bucket, index, buffers, stream, queue);
    else
      queue();
  };
  StepOps<T> ops(*this, batch, plans, tensor, r, attention_arrays);
  const std::span<const LayerOp> all(program);
  segment(0, [&] { run_layer_ops(all.first(attention_ops.front()), ops); });
  if (profiler) profiler->end_piece();
  for (std::size_t i = 0; i < attention_ops.size(); ++i) {
    const std::size_t at = attention_ops[i];
    const std::size_t end = i + 1 < attention_ops.size() ? attention_ops[i + 1] : all.size();
    profiled(ProfiledPiece::kAttention, [&] { ops.run(std::get<Attention>(all[at])); });
    profiled(ProfiledPiece::kForward, [&] {
      segment(static_cast<int32_t>(i) + 1, [&] { run_layer_ops(all.subspan(at + 1, end - at - 1), ops); });
    });
  }
}

const float* CudaBackend::Impl::norm_weight(NormWeight norm) const {
  if (norm.kind == NormKind::kOutput) return weights->output_norm;
  return select_norm_weight(norm, weights->output_norm, weights->layers[static_cast<std::size_t>(norm.layer)]);
}

CudaBackend::CudaBackend(const ModelConfig& config, std::span<const RawTensor> tensors, const std::string& source,
                         const CudaBackendOptions& options)
    : impl_(std::make_unique<Impl>(config, options)) {
  impl_->weights.emplace(DeviceWeights::upload(config, tensors, source, options.dtype, impl_->stream));
  impl_->allocate_workspaces();
}

CudaBackend::CudaBackend(const ModelConfig& config, uint64_t dummy_seed, const CudaBackendOptions& options)
    : impl_(std::make_unique<Impl>(config, options)) {
  impl_->weights.emplace(DeviceWeights::dummy(config, dummy_seed, options.dtype, impl_->stream));
  impl_->allocate_workspaces();
}

CudaBackend::~CudaBackend() = default;

void CudaBackend::check_supported(const ModelConfig& config) {
  // Every architecture pagedgen reads (model_config.h) runs; what the kernels bound is below.
  if (!attention_supports_head_dim(config.head_dim))
    fail_setting("device",
                 "cannot run this model: the CUDA backend runs head dimensions 64, 96, 128 and 256 and "
                 "this model's is {}; run it on the CPU",
                 config.head_dim);
  if (config.num_heads / config.num_kv_heads > kAttentionMaxRows)
    fail_setting("device",
                 "cannot run this model: the CUDA backend runs up to {} query heads per KV head and "
                 "this model has {}; run it on the CPU",
                 kAttentionMaxRows, config.num_heads / config.num_kv_heads);
  if (config.rope_dim > 512)
    fail_setting("device",
                 "cannot run this model: the CUDA backend rotates at most 512 dimensions per head and this "
                 "model rotates {}; run it on the CPU",
                 config.rope_dim);
}

std::size_t CudaBackend::kv_bytes_per_block(std::size_t block_size) const {
  return impl_->config.kv_bytes_per_token(impl_->dtype_bytes()) * block_size;
}

std::vector<int32_t> CudaBackend::kv_kind_windows() const { return pagedgen::kv_kind_windows(impl_->config); }

std::size_t CudaBackend::kv_kind_bytes_per_block(KvKindId kind, std::size_t block_size) const {
  return kv_kind_bytes(impl_->config, kind, kv_bytes_per_block(block_size));
}

void CudaBackend::allocate_kv_pool(std::size_t num_blocks, std::size_t block_size) {
  const int32_t one_kind[] = {static_cast<int32_t>(num_blocks)};
  impl_->layer_kinds.assign(static_cast<std::size_t>(impl_->config.num_layers), 0);
  impl_->allocate_pools(one_kind, block_size);
}

void CudaBackend::allocate_kv_pools(std::span<const int32_t> kind_num_blocks, std::size_t block_size) {
  const ModelConfig& c = impl_->config;
  PG_CHECK(kind_num_blocks.size() == c.kv_kinds().size(), "{} pool kinds for a model of {}", kind_num_blocks.size(),
           c.kv_kinds().size());
  impl_->layer_kinds.clear();
  for (int64_t l = 0; l < c.num_layers; ++l) impl_->layer_kinds.push_back(c.layer_kv_kind(l));
  impl_->allocate_pools(kind_num_blocks, block_size);
}

void CudaBackend::Impl::allocate_pools(std::span<const int32_t> kind_num_blocks, std::size_t block_size) {
  PG_CHECK(block_size >= 1, "block size must be at least 1");
  PG_CHECK(kind_num_blocks.size() <= kMaxKvKinds, "{} layer kinds, at most {}", kind_num_blocks.size(), kMaxKvKinds);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  kv_pool = DeviceBuffer();
  ++num_buffer_moves;
  layouts.clear();
  for (int32_t num_blocks : kind_num_blocks)
    layouts.push_back(KvLayout{num_blocks, config.num_kv_heads, static_cast<int64_t>(block_size), config.head_dim});
  // Kind by kind, each kind's layers in order: K then V of each.
  std::size_t elements = 0;
  kind_pool_offset.assign(layouts.size(), 0);
  layer_pool_offset.assign(layer_kinds.size(), 0);
  for (std::size_t kind = 0; kind < layouts.size(); ++kind) {
    kind_pool_offset[kind] = elements;
    for (std::size_t l = 0; l < layer_kinds.size(); ++l) {
      if (static_cast<std::size_t>(layer_kinds[l]) != kind) continue;
      layer_pool_offset[l] = elements;
      elements += 2 * static_cast<std::size_t>(layouts[kind].elements_per_layer());
    }
  }
  const std::size_t bytes = elements * dtype_bytes();
  void* probe = nullptr;
  if (cudaMalloc(&probe, bytes) != cudaSuccess) {
    cudaGetLastError();
    std::size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    std::string blocks;
    for (int32_t n : kind_num_blocks) blocks += fmt::format("{}{}", blocks.empty() ? "" : " + ", n);
    fail_setting("kv_pool", "asks too much: the KV pool of {} blocks ({}) does not fit in device memory ({} free)",
                 blocks, format_bytes(bytes), format_bytes(free_bytes));
  }
  CUDA_CHECK(cudaFree(probe));
  kv_pool = DeviceBuffer(bytes);
  CUDA_CHECK(cudaMemsetAsync(kv_pool.data(), 0, bytes, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

void CudaBackend::forward(const StepBatch& batch, std::span<float> logits) {
  Impl& m = *impl_;
  PG_CHECK(m.num_in_flight == 0, "forward() while {} steps are in flight", m.num_in_flight);
  m.queue_forward(batch, logits.size(), {});
  if (batch.num_tokens > 0 && !logits.empty())
    CUDA_CHECK(cudaMemcpyAsync(logits.data(), m.logits.data(), logits.size_bytes(), cudaMemcpyDeviceToHost, m.stream));
  CUDA_CHECK(cudaStreamSynchronize(m.stream));
}

std::vector<SampledToken> CudaBackend::step(const StepBatch& batch, const SamplingBatch& sampling) {
  submit(batch, sampling, {});
  return collect();
}

void CudaBackend::submit(const StepBatch& batch, const SamplingBatch& sampling,
                         std::span<const OverlapToken> overlap_tokens) {
  Impl& m = *impl_;
  PG_CHECK(m.num_in_flight < 2, "a third step submitted before the first was collected");
  const auto vocab = static_cast<int32_t>(m.config.vocab_size);
  const auto num_logits_rows = static_cast<int32_t>(batch.logits_rows.size());
  if (m.profiler) m.profiler->begin_step(batch.num_tokens == batch.num_seqs, batch.num_tokens);
  m.queue_forward(batch, batch.logits_rows.size() * static_cast<std::size_t>(vocab), overlap_tokens);
  m.profiled(ProfiledPiece::kSampling,
             [&] { m.sampler.enqueue(m.logits.as<float>(), num_logits_rows, vocab, sampling, m.stream); });
  if (m.profiler) m.profiler->end_step();
  ++m.num_in_flight;
}

std::vector<SampledToken> CudaBackend::collect() {
  Impl& m = *impl_;
  PG_CHECK(m.num_in_flight > 0, "collect with no step submitted");
  --m.num_in_flight;
  std::vector<SampledToken> tokens = m.sampler.collect();
  if (m.profiler) m.profiler->finish_step();
  return tokens;
}

void CudaBackend::copy_blocks(std::span<const BlockCopy> copies) {
  Impl& m = *impl_;
  std::vector<BlockCopy> list;
  for (const BlockCopy& copy : copies) {
    PG_CHECK(copy.kind >= 0 && copy.kind < std::ssize(m.layouts), "block copy of layer kind {}, the pools have {}",
             copy.kind, m.layouts.size());
    const int64_t num_blocks = m.layouts[static_cast<std::size_t>(copy.kind)].num_blocks;
    PG_CHECK(copy.src >= 0 && copy.src < num_blocks && copy.dst >= 0 && copy.dst < num_blocks,
             "block copy {} -> {} outside a pool of {} blocks", copy.src, copy.dst, num_blocks);
    if (copy.src != copy.dst) list.push_back(copy);
  }
  if (list.empty()) return;
  ArrayPack pack;
  pack.add(std::span<const BlockCopy>(list));
  const auto* device_copies = reinterpret_cast<const BlockCopy*>(m.step_arrays.upload(pack, m.stream));
  // Copies run in order: a launch takes copies of one kind until one touches a block an
  // earlier copy of the launch reads or writes (a kind's pools sit back to back).
  std::unordered_set<int32_t> read, written;
  std::size_t begin = 0;
  auto flush = [&](std::size_t end) {
    if (end == begin) return;
    const auto kind = static_cast<std::size_t>(list[begin].kind);
    const KvLayout& layout = m.layouts[kind];
    const auto element_bytes = static_cast<int64_t>(m.dtype_bytes());
    const auto num_pools = static_cast<int32_t>(2 * std::ranges::count(m.layer_kinds, list[begin].kind));
    launch_copy_blocks(
        BlockCopyArgs{device_copies + begin, static_cast<int32_t>(end - begin),
                      m.kv_pool.as<std::byte>() + m.kind_pool_offset[kind] * m.dtype_bytes(),
                      layout.elements_per_layer() * element_bytes, num_pools, layout.block_stride() * element_bytes},
        m.stream);
    begin = end;
    read.clear();
    written.clear();
  };
  for (std::size_t i = 0; i < list.size(); ++i) {
    const BlockCopy& copy = list[i];
    if (copy.kind != list[begin].kind || written.contains(copy.src) || written.contains(copy.dst) ||
        read.contains(copy.dst))
      flush(i);
    read.insert(copy.src);
    written.insert(copy.dst);
  }
  flush(list.size());
}

DeviceMemoryReport CudaBackend::device_memory() const {
  return DeviceMemoryReport{static_cast<int64_t>(impl_->weights->bytes()), static_cast<int64_t>(impl_->kv_pool.bytes()),
                            static_cast<int64_t>(impl_->activation_bytes())};
}

int64_t CudaBackend::vocab_size() const { return impl_->config.vocab_size; }

int32_t CudaBackend::kv_pool_blocks(const KvPoolBudget& budget, std::size_t block_size) const {
  const std::size_t per_block = kv_bytes_per_block(block_size);
  if (budget.num_blocks) return *budget.num_blocks;
  if (budget.bytes) return num_blocks_in(*budget.bytes, per_block, block_size);
  const std::size_t bytes = kv_budget_bytes(budget.device_memory_fraction);
  if (bytes < per_block)
    fail_setting("gpu_memory_utilization",
                 "{} leaves {} after weights and activations, less than one KV block of "
                 "{}; raise it or lower the tokens per step (max_batch_tokens)",
                 budget.device_memory_fraction, format_bytes(bytes), format_bytes(per_block));
  return static_cast<int32_t>(std::min<std::size_t>(bytes / per_block, INT32_MAX));
}

std::string CudaBackend::device() const {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, impl_->options.device));
  return fmt::format("{} (sm_{}{}, {})", prop.name, prop.major, prop.minor, format_bytes(prop.totalGlobalMem));
}

std::size_t CudaBackend::kv_budget_bytes(double utilization) const {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const double budget = utilization * static_cast<double>(total_bytes) - static_cast<double>(total_bytes - free_bytes);
  return budget > 0 ? static_cast<std::size_t>(budget) : 0;
}

}  // namespace pagedgen::gpu
