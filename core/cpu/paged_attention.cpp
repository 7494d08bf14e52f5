#include "cpu/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cpu/fixed_order_dot.h"
#include "cpu/fixed_order_exp.h"
#include "cpu/kv_dtype.h"
#include "util/error.h"

namespace pagedgen::cpu {

namespace {

// The largest head dim the CPU attention takes (a scratch row on the stack).
constexpr std::size_t kMaxHeadDim = 512;

// The kernels below work on kHeads query heads that share one KV head, so each K and V
// row is read once for all of them, and on several rows or dimensions at a time, so the
// FMA chains run side by side. They never change an element's own sequence of operations:
//   score[h][j] = scale * dot_fixed_order(q_h, k_j)        (fixed_order_dot.h)
//   w[h][j]     = exp_fixed(score[h][j] - max_j score[h][j]), summed by exp_sum_fixed_order
//   out[h][d]   = fma(w[h][n-1], v_{n-1}[d], ... fma(w[h][0], v_0[d], 0))   (increasing j)
// so the bits are those of the scalar order whatever the grouping, block size or batch.

#if PAGEDGEN_CPU_AVX2
// Asks for a K or V row ahead of use: rows sit in blocks scattered over the pool, so the
// hardware prefetcher loses the stream at every block edge. kLocality is
// __builtin_prefetch's (3: into L1, prefetcht0; 2: into L2, prefetcht1), which GCC and
// clang both take (GCC's _mm_prefetch wants its own enum type, clang's an int).
constexpr int kIntoL1 = 3;
constexpr int kIntoL2 = 2;
template <int kLocality, typename Kv>
void prefetch_row(const Kv* row, std::size_t head_dim) {
  const char* bytes = reinterpret_cast<const char*>(row);
  for (std::size_t offset = 0; offset < head_dim * sizeof(Kv); offset += 64)
    __builtin_prefetch(bytes + offset, 0, kLocality);
}

#endif

// dot_fixed_order (fixed_order_dot.h) of q with a stored row, its values converted exactly.
template <typename Kv>
float dot_row(const float* q, const Kv* row, std::size_t head_dim) {
  if constexpr (std::is_same_v<Kv, float>) {
    return dot_fixed_order(q, row, head_dim);
  } else {
#if PAGEDGEN_CPU_AVX2
    // dot_fixed_order's vector form, converting as it loads.
    const std::size_t n8 = head_dim - head_dim % 8;
    __m256 acc = _mm256_setzero_ps();
    for (std::size_t k = 0; k < n8; k += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + k), load8(row + k), acc);
    float sum = reduce_m256(acc);
    for (std::size_t k = n8; k < head_dim; ++k) sum = std::fma(q[k], to_float(row[k]), sum);
    return sum;
#else
    float converted[kMaxHeadDim];
    for (std::size_t d = 0; d < head_dim; ++d) converted[d] = to_float(row[d]);
    return dot_fixed_order(q, converted, head_dim);
#endif
  }
}

// How many rows ahead the K rows are prefetched.
constexpr std::size_t kPrefetchRows = 16;

// scores (kHeads, n) = scale * q (kHeads, head_dim) . k_rows[j] for j < n. Also prefetches
// the V rows into L2 for weighted_heads.
template <int kHeads, typename Kv>
void score_heads(const float* q, const Kv* const* k_rows, [[maybe_unused]] const Kv* const* v_rows, std::size_t n,
                 std::size_t head_dim, float scale, float* scores) {
  std::size_t j = 0;
#if PAGEDGEN_CPU_AVX2
  constexpr int kRows = kHeads == 1 ? 8 : kHeads == 2 ? 6 : 4;  // at most 12 accumulators
  const std::size_t dim8 = head_dim - head_dim % 8;
  for (std::size_t i = 0; i < std::min(n, kPrefetchRows); ++i) prefetch_row<kIntoL1>(k_rows[i], head_dim);
  for (; j + kRows <= n; j += kRows) {
    for (std::size_t i = j + kPrefetchRows; i < std::min(n, j + kPrefetchRows + kRows); ++i)
      prefetch_row<kIntoL1>(k_rows[i], head_dim);
    for (std::size_t i = j; i < j + kRows; ++i) prefetch_row<kIntoL2>(v_rows[i], head_dim);
    __m256 acc[kHeads][kRows];
#pragma GCC unroll 4
    for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) acc[h][r] = _mm256_setzero_ps();
    for (std::size_t d = 0; d < dim8; d += 8) {
#pragma GCC unroll 4
      for (int h = 0; h < kHeads; ++h) {
        const __m256 qv = _mm256_loadu_ps(q + static_cast<std::size_t>(h) * head_dim + d);
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r) acc[h][r] = _mm256_fmadd_ps(qv, load8(k_rows[j + r] + d), acc[h][r]);
      }
    }
#pragma GCC unroll 4
    for (int h = 0; h < kHeads; ++h) {
      const float* qh = q + static_cast<std::size_t>(h) * head_dim;
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        float sum = reduce_m256(acc[h][r]);
        for (std::size_t d = dim8; d < head_dim; ++d) sum = std::fma(qh[d], to_float(k_rows[j + r][d]), sum);
        scores[static_cast<std::size_t>(h) * n + j + r] = sum * scale;
      }
    }
  }
#endif
  for (; j < n; ++j)
    for (int h = 0; h < kHeads; ++h)
      scores[static_cast<std::size_t>(h) * n + j] =
          dot_row(q + static_cast<std::size_t>(h) * head_dim, k_rows[j], head_dim) * scale;
}

// out (kHeads, head_dim) = sum over j < n, in increasing j, of weights[h][j] * v_rows[j].
// weights: (kHeads, n).
template <int kHeads, typename Kv>
void weighted_heads(const float* weights, const Kv* const* v_rows, std::size_t n, std::size_t head_dim, float* out) {
  std::size_t d0 = 0;
#if PAGEDGEN_CPU_AVX2
  constexpr int kVecs = kHeads == 1 ? 8 : 4;  // at most 12 accumulators
  for (; d0 + 8 * kVecs <= head_dim; d0 += 8 * kVecs) {
    __m256 acc[kHeads][kVecs];
#pragma GCC unroll 4
    for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
      for (int v = 0; v < kVecs; ++v) acc[h][v] = _mm256_setzero_ps();
    for (std::size_t j = 0; j < n; ++j) {
      __m256 w[kHeads];
#pragma GCC unroll 4
      for (int h = 0; h < kHeads; ++h) w[h] = _mm256_set1_ps(weights[static_cast<std::size_t>(h) * n + j]);
      const Kv* row = v_rows[j] + d0;
#pragma GCC unroll 8
      for (int v = 0; v < kVecs; ++v) {
        const __m256 vv = load8(row + 8 * v);
#pragma GCC unroll 4
        for (int h = 0; h < kHeads; ++h) acc[h][v] = _mm256_fmadd_ps(w[h], vv, acc[h][v]);
      }
    }
#pragma GCC unroll 4
    for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
      for (int v = 0; v < kVecs; ++v)
        _mm256_storeu_ps(out + static_cast<std::size_t>(h) * head_dim + d0 + 8 * v, acc[h][v]);
  }
  for (; d0 + 8 <= head_dim; d0 += 8)
    for (int h = 0; h < kHeads; ++h) {
      __m256 acc = _mm256_setzero_ps();
      for (std::size_t j = 0; j < n; ++j)
        acc = _mm256_fmadd_ps(_mm256_set1_ps(weights[static_cast<std::size_t>(h) * n + j]), load8(v_rows[j] + d0), acc);
      _mm256_storeu_ps(out + static_cast<std::size_t>(h) * head_dim + d0, acc);
    }
#endif
  for (int h = 0; h < kHeads; ++h)
    for (std::size_t d = d0; d < head_dim; ++d) {
      float acc = 0.0f;
      for (std::size_t j = 0; j < n; ++j)
        acc = std::fma(weights[static_cast<std::size_t>(h) * n + j], to_float(v_rows[j][d]), acc);
      out[static_cast<std::size_t>(h) * head_dim + d] = acc;
    }
}

// Attention of num_heads (1 to 3) consecutive query heads of one token over n positions.
//   q, out: (num_heads, head_dim);  weights: scratch (num_heads, n)
template <typename Kv>
void attend_heads(int num_heads, const float* q, const Kv* const* k_rows, const Kv* const* v_rows, std::size_t n,
                  std::size_t head_dim, float scale, float softcap, float* weights, float* out) {
  switch (num_heads) {
    case 1:
      score_heads<1>(q, k_rows, v_rows, n, head_dim, scale, weights);
      break;
    case 2:
      score_heads<2>(q, k_rows, v_rows, n, head_dim, scale, weights);
      break;
    default:
      score_heads<3>(q, k_rows, v_rows, n, head_dim, scale, weights);
      break;
  }
  if (softcap > 0.0f)
    for (std::size_t i = 0; i < static_cast<std::size_t>(num_heads) * n; ++i)
      weights[i] = softcap * std::tanh(weights[i] / softcap);
  std::vector<float> inv_sums(static_cast<std::size_t>(num_heads));
  for (int h = 0; h < num_heads; ++h) {
    float* w = weights + static_cast<std::size_t>(h) * n;
    float max_score = w[0];
    for (std::size_t j = 1; j < n; ++j) max_score = std::max(max_score, w[j]);
    inv_sums[static_cast<std::size_t>(h)] = 1.0f / exp_sum_fixed_order(w, n, max_score);
  }
  switch (num_heads) {
    case 1:
      weighted_heads<1>(weights, v_rows, n, head_dim, out);
      break;
    case 2:
      weighted_heads<2>(weights, v_rows, n, head_dim, out);
      break;
    default:
      weighted_heads<3>(weights, v_rows, n, head_dim, out);
      break;
  }
  for (int h = 0; h < num_heads; ++h)
    for (std::size_t d = 0; d < head_dim; ++d)
      out[static_cast<std::size_t>(h) * head_dim + d] *= inv_sums[static_cast<std::size_t>(h)];
}

// The sequence each token belongs to, from query_start.
template <typename Kv>
std::vector<int32_t> token_sequences(const PagedAttentionArgsOf<Kv, float>& args) {
  std::vector<int32_t> seq_of(static_cast<std::size_t>(args.num_tokens));
  for (int32_t s = 0; s < args.num_seqs; ++s)
    for (int32_t t = args.query_start[s]; t < args.query_start[s + 1]; ++t) seq_of[static_cast<std::size_t>(t)] = s;
  return seq_of;
}

}  // namespace

template <typename Kv>
KvWriteArgsOf<Kv> kv_write_args(const StepBatch& batch, const float* k, const float* v, Kv* k_pool, Kv* v_pool,
                                KvLayout layout) {
  PG_CHECK(batch.slot_mapping.size() == static_cast<std::size_t>(batch.num_tokens), "slot mapping of {} for {} tokens",
           batch.slot_mapping.size(), batch.num_tokens);
  return KvWriteArgsOf<Kv>{k, v, batch.slot_mapping.data(), batch.num_tokens, k_pool, v_pool, layout};
}

template <typename Kv>
PagedAttentionArgsOf<Kv, float> paged_attention_args(const StepBatch& batch, const float* q, int32_t num_heads,
                                                     const Kv* k_pool, const Kv* v_pool, KvLayout layout, float scale,
                                                     float* out, int32_t window, float softcap) {
  PG_CHECK(batch.positions.size() == static_cast<std::size_t>(batch.num_tokens) &&
               batch.query_start.size() == static_cast<std::size_t>(batch.num_seqs) + 1 &&
               batch.context_lens.size() == static_cast<std::size_t>(batch.num_seqs) &&
               batch.block_tables.size() ==
                   static_cast<std::size_t>(batch.num_seqs) * static_cast<std::size_t>(batch.max_blocks_per_seq),
           "step batch arrays disagree with its {} tokens and {} sequences", batch.num_tokens, batch.num_seqs);
  return PagedAttentionArgsOf<Kv, float>{q,
                                         k_pool,
                                         v_pool,
                                         out,
                                         batch.positions.data(),
                                         batch.query_start.data(),
                                         batch.context_lens.data(),
                                         batch.block_tables.data(),
                                         batch.num_tokens,
                                         batch.num_seqs,
                                         batch.max_blocks_per_seq,
                                         num_heads,
                                         scale,
                                         layout,
                                         window,
                                         softcap};
}

template <typename Kv>
void write_kv_cache(const KvWriteArgsOf<Kv>& args) {
  const KvLayout layout = args.layout;
  const auto head_dim = static_cast<std::size_t>(layout.head_dim);
  for (std::size_t t = 0; t < static_cast<std::size_t>(args.num_tokens); ++t) {
    const KvSlot slot = split_slot(args.slot_mapping[t], layout.block_size);
    PG_CHECK(args.slot_mapping[t] >= 0 && slot.block_id < layout.num_blocks,
             "token {} maps to slot {} outside a pool of {} blocks", t, args.slot_mapping[t], layout.num_blocks);
    for (int64_t h = 0; h < layout.num_kv_heads; ++h) {
      const std::size_t src =
          (t * static_cast<std::size_t>(layout.num_kv_heads) + static_cast<std::size_t>(h)) * head_dim;
      const int64_t dst = layout.offset(slot.block_id, h, slot.slot_in_block, 0);
      for (std::size_t d = 0; d < head_dim; ++d) {
        args.k_pool[dst + static_cast<int64_t>(d)] = from_float<Kv>(args.k[src + d]);
        args.v_pool[dst + static_cast<int64_t>(d)] = from_float<Kv>(args.v[src + d]);
      }
    }
  }
}

template <typename Kv>
void paged_attention(const PagedAttentionArgsOf<Kv, float>& args, CpuThreadPool& pool) {
  const KvLayout layout = args.layout;
  const auto num_heads = static_cast<std::size_t>(args.num_heads);
  const float scale = args.scale;
  const auto window = static_cast<std::size_t>(std::max(args.window, 0));
  float* const out = args.out;
  const Kv* const k_pool = args.k_pool;
  const Kv* const v_pool = args.v_pool;
  const auto num_kv_heads = static_cast<std::size_t>(layout.num_kv_heads);
  const auto head_dim = static_cast<std::size_t>(layout.head_dim);
  const auto block_size = static_cast<std::size_t>(layout.block_size);
  PG_CHECK(num_kv_heads > 0 && num_heads % num_kv_heads == 0, "{} query heads for {} KV heads", num_heads,
           num_kv_heads);
  PG_CHECK(head_dim <= kMaxHeadDim, "head dim {} above the CPU attention's {}", head_dim, kMaxHeadDim);
  const std::size_t group = num_heads / num_kv_heads;
  const std::vector<int32_t> seq_of = token_sequences(args);
  // A task is one token, one KV head and the query heads that read it, kMaxHeads at a time
  // (their K/V rows stay in cache between heads); with few tokens (decode), one query head
  // per task so that every thread has work. The grouping never changes a head's arithmetic.
  constexpr std::size_t kMaxHeads = 3;
  const std::size_t units = static_cast<std::size_t>(args.num_tokens) * num_kv_heads;
  const std::size_t heads_per_task = units >= 4 * pool.num_threads() ? group : 1;
  const std::size_t tasks_per_unit = (group + heads_per_task - 1) / heads_per_task;

  pool.run(units * tasks_per_unit, [&](std::size_t task, std::size_t) {
    const std::size_t unit = task / tasks_per_unit;
    const std::size_t t = unit / num_kv_heads;
    const std::size_t kv_head = unit % num_kv_heads;
    const std::size_t first_head = (task % tasks_per_unit) * heads_per_task;
    const auto s = static_cast<std::size_t>(seq_of[t]);
    PG_CHECK(args.positions[t] >= 0 && args.positions[t] < args.context_lens[s],
             "token {} at position {} outside its sequence's context of {}", t, args.positions[t],
             args.context_lens[s]);
    // Causal: positions first..end-1, end = p + 1, first = 0 or the window's start.
    const auto end = static_cast<std::size_t>(args.positions[t]) + 1;
    const std::size_t first = window > 0 && end > window ? end - window : 0;
    const std::size_t num_visible = end - first;
    PG_CHECK((end + block_size - 1) / block_size <= static_cast<std::size_t>(args.max_blocks_per_seq),
             "position {} needs more blocks than the table's {}", args.positions[t], args.max_blocks_per_seq);
    const int32_t* block_table = args.block_tables + s * static_cast<std::size_t>(args.max_blocks_per_seq);
    const float* q_token = args.q + t * num_heads * head_dim;
    for (std::size_t b = first / block_size; b * block_size < end; ++b)
      PG_CHECK(block_table[b] >= 0 && block_table[b] < layout.num_blocks,
               "sequence {} lists block {} outside a pool of {} blocks", s, block_table[b], layout.num_blocks);

    // K and V rows of this KV head for positions first..end-1, through the block table:
    // from here on the arithmetic sees only positions, never blocks.
    //   position j -> block_table[j / block_size], slot j % block_size
    std::vector<const Kv*> k_rows(num_visible);
    std::vector<const Kv*> v_rows(num_visible);
    for (std::size_t j = first; j < end;) {
      const std::size_t slot = j % block_size;
      const int64_t block_offset = layout.offset(block_table[j / block_size], static_cast<int64_t>(kv_head), 0, 0);
      const std::size_t n = std::min(block_size - slot, end - j);
      for (std::size_t i = 0; i < n; ++i) {
        k_rows[j - first + i] = k_pool + block_offset + static_cast<int64_t>((slot + i) * head_dim);
        v_rows[j - first + i] = v_pool + block_offset + static_cast<int64_t>((slot + i) * head_dim);
      }
      j += n;
    }
    std::vector<float> weights(std::min(heads_per_task, kMaxHeads) * num_visible);
    for (std::size_t g = first_head; g < std::min(group, first_head + heads_per_task); g += kMaxHeads) {
      const std::size_t head = kv_head * group + g;
      attend_heads(static_cast<int>(std::min({kMaxHeads, group - g, first_head + heads_per_task - g})),
                   q_token + head * head_dim, k_rows.data(), v_rows.data(), num_visible, head_dim, scale, args.softcap,
                   weights.data(), out + (t * num_heads + head) * head_dim);
    }
  });
}

// The element types the CPU backend's KV pools use (kv_dtype.h).
#define PAGEDGEN_PAGED_ATTENTION_FOR(Kv)                                                                             \
  template KvWriteArgsOf<Kv> kv_write_args(const StepBatch&, const float*, const float*, Kv*, Kv*, KvLayout);        \
  template PagedAttentionArgsOf<Kv, float> paged_attention_args(const StepBatch&, const float*, int32_t, const Kv*,  \
                                                                const Kv*, KvLayout, float, float*, int32_t, float); \
  template void write_kv_cache(const KvWriteArgsOf<Kv>&);                                                            \
  template void paged_attention(const PagedAttentionArgsOf<Kv, float>&, CpuThreadPool&);
PAGEDGEN_PAGED_ATTENTION_FOR(float)
PAGEDGEN_PAGED_ATTENTION_FOR(Float16)
PAGEDGEN_PAGED_ATTENTION_FOR(BFloat16)
#undef PAGEDGEN_PAGED_ATTENTION_FOR

}  // namespace pagedgen::cpu
