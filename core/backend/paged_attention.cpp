#include "backend/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/fixed_order_dot.h"
#include "util/error.h"

namespace pagedgen::cpu {

namespace {

// acc (n) = fma(weight, v (n), acc): one fused operation per element, vector or not.
void fma_row(float* acc, float weight, const float* v, std::size_t n) {
  std::size_t d = 0;
#if PAGEDGEN_CPU_AVX2
  const __m256 wv = _mm256_set1_ps(weight);
  for (; d + 8 <= n; d += 8)
    _mm256_storeu_ps(acc + d, _mm256_fmadd_ps(wv, _mm256_loadu_ps(v + d), _mm256_loadu_ps(acc + d)));
#endif
  for (; d < n; ++d) acc[d] = std::fma(weight, v[d], acc[d]);
}

// The sequence each token belongs to, from query_start.
std::vector<int32_t> token_sequences(const PagedAttentionArgs& args) {
  std::vector<int32_t> seq_of(static_cast<std::size_t>(args.num_tokens));
  for (int32_t s = 0; s < args.num_seqs; ++s)
    for (int32_t t = args.query_start[s]; t < args.query_start[s + 1]; ++t) seq_of[static_cast<std::size_t>(t)] = s;
  return seq_of;
}

}  // namespace

KvWriteArgs kv_write_args(const StepBatch& batch, const float* k, const float* v, float* k_pool, float* v_pool,
                          KvLayout layout) {
  PG_CHECK(batch.slot_mapping.size() == static_cast<std::size_t>(batch.num_tokens), "slot mapping of {} for {} tokens",
           batch.slot_mapping.size(), batch.num_tokens);
  return KvWriteArgs{k, v, batch.slot_mapping.data(), batch.num_tokens, k_pool, v_pool, layout};
}

PagedAttentionArgs paged_attention_args(const StepBatch& batch, const float* q, int32_t num_heads,
                                        const float* k_pool, const float* v_pool, KvLayout layout, float scale,
                                        float* out) {
  PG_CHECK(batch.positions.size() == static_cast<std::size_t>(batch.num_tokens) &&
               batch.query_start.size() == static_cast<std::size_t>(batch.num_seqs) + 1 &&
               batch.context_lens.size() == static_cast<std::size_t>(batch.num_seqs) &&
               batch.block_tables.size() ==
                   static_cast<std::size_t>(batch.num_seqs) * static_cast<std::size_t>(batch.max_blocks_per_seq),
           "step batch arrays disagree with its {} tokens and {} sequences", batch.num_tokens, batch.num_seqs);
  return PagedAttentionArgs{q,
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
                            layout};
}

void write_kv_cache(const KvWriteArgs& args) {
  const KvLayout layout = args.layout;
  const auto head_dim = static_cast<std::size_t>(layout.head_dim);
  for (std::size_t t = 0; t < static_cast<std::size_t>(args.num_tokens); ++t) {
    const KvSlot slot = split_slot(args.slot_mapping[t], layout.block_size);
    PG_CHECK(args.slot_mapping[t] >= 0 && slot.block_id < layout.num_blocks,
             "token {} maps to slot {} outside a pool of {} blocks", t, args.slot_mapping[t], layout.num_blocks);
    for (int64_t h = 0; h < layout.num_kv_heads; ++h) {
      const std::size_t src = (t * static_cast<std::size_t>(layout.num_kv_heads) + static_cast<std::size_t>(h)) * head_dim;
      const int64_t dst = layout.offset(slot.block_id, h, slot.slot_in_block, 0);
      std::memcpy(args.k_pool + dst, args.k + src, head_dim * sizeof(float));
      std::memcpy(args.v_pool + dst, args.v + src, head_dim * sizeof(float));
    }
  }
}

void paged_attention(const PagedAttentionArgs& args, CpuThreadPool& pool) {
  const KvLayout layout = args.layout;
  const auto num_heads = static_cast<std::size_t>(args.num_heads);
  const float scale = args.scale;
  float* const out = args.out;
  const float* const k_pool = args.k_pool;
  const float* const v_pool = args.v_pool;
  const auto num_kv_heads = static_cast<std::size_t>(layout.num_kv_heads);
  const auto head_dim = static_cast<std::size_t>(layout.head_dim);
  const auto block_size = static_cast<std::size_t>(layout.block_size);
  PG_CHECK(num_kv_heads > 0 && num_heads % num_kv_heads == 0, "{} query heads for {} KV heads", num_heads,
           num_kv_heads);
  const std::size_t group = num_heads / num_kv_heads;
  const std::vector<int32_t> seq_of = token_sequences(args);

  // One task: one token and one KV head, with the `group` query heads that read it, so
  // each K/V vector is loaded once for all of them.
  pool.run(static_cast<std::size_t>(args.num_tokens) * num_kv_heads, [&](std::size_t task, std::size_t) {
    const std::size_t t = task / num_kv_heads;
    const std::size_t kv_head = task % num_kv_heads;
    const auto s = static_cast<std::size_t>(seq_of[t]);
    PG_CHECK(args.positions[t] >= 0 && args.positions[t] < args.context_lens[s],
             "token {} at position {} outside its sequence's context of {}", t, args.positions[t], args.context_lens[s]);
    const auto num_visible = static_cast<std::size_t>(args.positions[t]) + 1;  // causal: 0..p
    PG_CHECK((num_visible + block_size - 1) / block_size <= static_cast<std::size_t>(args.max_blocks_per_seq),
             "position {} needs more blocks than the table's {}", args.positions[t], args.max_blocks_per_seq);
    const int32_t* block_table = args.block_tables + s * static_cast<std::size_t>(args.max_blocks_per_seq);
    const float* q_token = args.q + t * num_heads * head_dim;
    for (std::size_t b = 0; b * block_size < num_visible; ++b)
      PG_CHECK(block_table[b] >= 0 && block_table[b] < layout.num_blocks,
               "sequence {} lists block {} outside a pool of {} blocks", s, block_table[b], layout.num_blocks);

    // scores (group, num_visible), then out accumulators (group, head_dim).
    std::vector<float> scores(group * num_visible);
    for (std::size_t j0 = 0; j0 < num_visible; j0 += block_size) {
      const float* k_block = k_pool + layout.offset(block_table[j0 / block_size], static_cast<int64_t>(kv_head), 0, 0);
      const std::size_t n = std::min(block_size, num_visible - j0);
      for (std::size_t i = 0; i < n; ++i) {
        const float* k_row = k_block + i * head_dim;
        for (std::size_t g = 0; g < group; ++g) {
          const float* q_head = q_token + (kv_head * group + g) * head_dim;
          scores[g * num_visible + j0 + i] = dot_fixed_order(q_head, k_row, head_dim) * scale;
        }
      }
    }
    std::vector<float> sums(group);
    for (std::size_t g = 0; g < group; ++g) {
      float* sc = scores.data() + g * num_visible;
      float max_score = sc[0];
      for (std::size_t j = 1; j < num_visible; ++j) max_score = std::max(max_score, sc[j]);
      float sum = 0.0f;
      for (std::size_t j = 0; j < num_visible; ++j) {
        sc[j] = std::exp(sc[j] - max_score);
        sum += sc[j];
      }
      sums[g] = sum;
      std::fill_n(out + (t * num_heads + kv_head * group + g) * head_dim, head_dim, 0.0f);
    }
    for (std::size_t j0 = 0; j0 < num_visible; j0 += block_size) {
      const float* v_block = v_pool + layout.offset(block_table[j0 / block_size], static_cast<int64_t>(kv_head), 0, 0);
      const std::size_t n = std::min(block_size, num_visible - j0);
      for (std::size_t i = 0; i < n; ++i) {
        const float* v_row = v_block + i * head_dim;
        for (std::size_t g = 0; g < group; ++g)
          fma_row(out + (t * num_heads + kv_head * group + g) * head_dim, scores[g * num_visible + j0 + i], v_row,
                  head_dim);
      }
    }
    for (std::size_t g = 0; g < group; ++g) {
      float* o = out + (t * num_heads + kv_head * group + g) * head_dim;
      const float inv_sum = 1.0f / sums[g];
      for (std::size_t d = 0; d < head_dim; ++d) o[d] *= inv_sum;
    }
  });
}

}  // namespace pagedgen::cpu
