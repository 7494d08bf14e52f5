// The two kernels of CPU attention, for 1 to 3 query heads that share one KV head, over
// that head's K and V rows of the visible positions in position order: the scores, and the
// weighted sum of V rows. paged_attention.cpp gathers the rows through the block tables and
// computes the softmax between the two; nothing here sees a block.
// Every output element follows one operation order, whatever the grouping of heads, rows
// or dimensions and whichever instruction set runs it (scalar, AVX2, AVX-512):
//   score[h][j] = scale * dot_fixed_order(q_h, k_j)        (fixed_order_dot.h)
//   w[h][j]     = exp_fixed(score[h][j] - max_j score[h][j]), summed by exp_sum_fixed_order
//   out[h][d]   = fma(w[h][n-1], v_{n-1}[d], ... fma(w[h][0], v_0[d], 0)) * (1 / sum)
// so the bits never depend on the block size, the batch or the machine's vector width.
#pragma once

#include <cstddef>

namespace pagedgen::cpu {

// The largest head dim the CPU attention takes (scratch rows on the stack).
inline constexpr std::size_t kMaxAttentionHeadDim = 512;

// scores[h * stride + j] = scale * dot_fixed_order(q_h, k_rows[j]) for the num_heads (1 to
// 3) heads of q, (num_heads, head_dim), and j < n; k_rows: rows of head_dim stored values
// (kv_dtype.h).
template <typename Kv>
void score_rows(int num_heads, const float* q, const Kv* const* k_rows, std::size_t n, std::size_t head_dim,
                float scale, float* scores, std::size_t stride);

// out[h][d] (num_heads, head_dim) = the fma chain over j < n, in increasing j, of
// weights[h * stride + j] * v_rows[j][d], from 0, or with `more` going on from out's value:
// a chain cut into pieces of rows is the same chain.
template <typename Kv>
void weighted_rows(int num_heads, const float* weights, std::size_t stride, const Kv* const* v_rows, std::size_t n,
                   std::size_t head_dim, bool more, float* out);

}  // namespace pagedgen::cpu
