#include "cpu/paged_attention.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "cpu/attention_heads.h"
#include "cpu/fixed_order_dot.h"
#include "cpu/fixed_order_exp.h"
#include "cpu/kv_dtype.h"
#include "util/error.h"

namespace pagedgen::cpu {

// Consecutive query tokens of one sequence that share a task: they read the same K and V
// rows, which attend_tile keeps in cache for all of them.
constexpr std::size_t kTileTokens = 8;
// Outside the anonymous namespace: the task lambda holds a vector of them, and GCC warns
// about a lambda with a field of an internal type in a unity batch (-Wsubobject-linkage).
struct QueryTile {
  std::size_t seq;
  std::size_t first_token;
  std::size_t num_tokens;
};

namespace {

// One query token of a tile: its heads' q and out, (num_heads, head_dim) each, and the rows
// it sees, [first, end) of the tile's rows.
struct TileToken {
  const float* q;
  float* out;
  std::size_t first;
  std::size_t end;
};

// max_j w[j], j < n (n > 0). A maximum is the same value in any order of comparison (a NaN
// score makes every weight NaN either way, and the sign of a zero maximum never reaches a
// weight), so vector lanes may take it: one 8-lane chain instead of one compare per score.
float max_of(const float* w, std::size_t n) {
  float max_value = w[0];
  std::size_t j = 1;
#if PAGEDGEN_CPU_AVX2
  if (n >= 8) {
    __m256 lanes = _mm256_loadu_ps(w);
    for (j = 8; j + 8 <= n; j += 8) lanes = _mm256_max_ps(lanes, _mm256_loadu_ps(w + j));
    float lane_max[8];
    _mm256_storeu_ps(lane_max, lanes);
    for (float x : lane_max) max_value = std::max(max_value, x);
  }
#endif
  for (; j < n; ++j) max_value = std::max(max_value, w[j]);
  return max_value;
}

// Rows per block of attend_tile: a block of K or V rows (32 KiB of float rows of 64) stays
// in L1 while every token of the tile reads it.
constexpr std::size_t kRowBlock = 128;

// Calls fn(i, lo, hi) for each block of kRowBlock rows and each token i that sees some of
// it: [lo, hi), the token's rows in the block. Blocks in increasing order.
template <typename Fn>
void for_row_blocks(std::span<const TileToken> tokens, Fn&& fn) {
  std::size_t first = tokens[0].first, end = 0;
  for (const TileToken& token : tokens) first = std::min(first, token.first), end = std::max(end, token.end);
  for (std::size_t block = first; block < end; block += kRowBlock)
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const std::size_t lo = std::max(block, tokens[i].first);
      const std::size_t hi = std::min(block + kRowBlock, tokens[i].end);
      if (lo < hi) fn(i, lo, hi);
    }
}

// For every token of the tile: out = softmax(cap(scale * q . k_j)) . v_j over its rows j,
// the cap softcap * tanh(x / softcap) when softcap > 0. Each token's bits are those it
// would get alone: the rows are visited a block at a time for all the tokens, so that each
// block is read from memory once, and the blocking never changes an element's operations.
template <typename Kv>
void attend_tile(std::span<const TileToken> tokens, int num_heads, const Kv* const* k_rows, const Kv* const* v_rows,
                 std::size_t head_dim, float scale, float softcap) {
  const auto heads = static_cast<std::size_t>(num_heads);
  // Token i's scores, then weights, (heads, its rows), at offset[i] in one scratch array.
  std::vector<std::size_t> offset(tokens.size() + 1, 0);
  for (std::size_t i = 0; i < tokens.size(); ++i) offset[i + 1] = offset[i] + heads * (tokens[i].end - tokens[i].first);
  std::vector<float> weights(offset.back());
  const auto rows_of = [&](std::size_t i) { return tokens[i].end - tokens[i].first; };
  for_row_blocks(tokens, [&](std::size_t i, std::size_t lo, std::size_t hi) {
    score_rows(num_heads, tokens[i].q, k_rows + lo, hi - lo, head_dim, scale,
               weights.data() + offset[i] + (lo - tokens[i].first), rows_of(i));
  });
  std::vector<float> inv_sums(tokens.size() * heads);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    float* token_weights = weights.data() + offset[i];
    if (softcap > 0.0f)
      for (std::size_t k = 0; k < heads * rows_of(i); ++k)
        token_weights[k] = softcap * std::tanh(token_weights[k] / softcap);
    for (std::size_t h = 0; h < heads; ++h) {
      float* w = token_weights + h * rows_of(i);
      inv_sums[i * heads + h] = 1.0f / exp_sum_fixed_order(w, rows_of(i), max_of(w, rows_of(i)));
    }
  }
  for_row_blocks(tokens, [&](std::size_t i, std::size_t lo, std::size_t hi) {
    weighted_rows(num_heads, weights.data() + offset[i] + (lo - tokens[i].first), rows_of(i), v_rows + lo, hi - lo,
                  head_dim, lo > tokens[i].first, tokens[i].out);
  });
  for (std::size_t i = 0; i < tokens.size(); ++i)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t d = 0; d < head_dim; ++d) tokens[i].out[h * head_dim + d] *= inv_sums[i * heads + h];
}

// The batch's tokens in tiles of at most kTileTokens, never across sequences.
template <typename Kv>
std::vector<QueryTile> query_tiles(const PagedAttentionArgsOf<Kv, float>& args) {
  std::vector<QueryTile> tiles;
  for (int32_t s = 0; s < args.num_seqs; ++s) {
    const auto end = static_cast<std::size_t>(args.query_start[s + 1]);
    for (auto t = static_cast<std::size_t>(args.query_start[s]); t < end; t += kTileTokens)
      tiles.push_back({static_cast<std::size_t>(s), t, std::min(kTileTokens, end - t)});
  }
  return tiles;
}

// The positions token t of sequence s sees, [first, end): causal, end = p + 1, and first =
// 0 or the window's start. Checked against the sequence's context and block table.
template <typename Kv>
TileToken visible_positions(const PagedAttentionArgsOf<Kv, float>& args, std::size_t t, std::size_t s) {
  PG_CHECK(args.positions[t] >= 0 && args.positions[t] < args.context_lens[s],
           "token {} at position {} outside its sequence's context of {}", t, args.positions[t], args.context_lens[s]);
  const auto end = static_cast<std::size_t>(args.positions[t]) + 1;
  const auto block_size = static_cast<std::size_t>(args.layout.block_size);
  PG_CHECK((end + block_size - 1) / block_size <= static_cast<std::size_t>(args.max_blocks_per_seq),
           "position {} needs more blocks than the table's {}", args.positions[t], args.max_blocks_per_seq);
  const auto window = static_cast<std::size_t>(std::max(args.window, 0));
  return TileToken{nullptr, nullptr, window > 0 && end > window ? end - window : 0, end};
}

// K and V rows of one KV head for positions first..end-1 of sequence s, through its block
// table: from here on the arithmetic sees only positions, never blocks.
//   position j -> block_table[j / block_size], slot j % block_size
template <typename Kv>
void gather_rows(const PagedAttentionArgsOf<Kv, float>& args, std::size_t s, std::size_t kv_head, std::size_t first,
                 std::size_t end, std::vector<const Kv*>& k_rows, std::vector<const Kv*>& v_rows) {
  const KvLayout layout = args.layout;
  const auto block_size = static_cast<std::size_t>(layout.block_size);
  const auto head_dim = static_cast<std::size_t>(layout.head_dim);
  const int32_t* block_table = args.block_tables + s * static_cast<std::size_t>(args.max_blocks_per_seq);
  for (std::size_t b = first / block_size; b * block_size < end; ++b)
    PG_CHECK(block_table[b] >= 0 && block_table[b] < layout.num_blocks,
             "sequence {} lists block {} outside a pool of {} blocks", s, block_table[b], layout.num_blocks);
  k_rows.resize(end - first);
  v_rows.resize(end - first);
  for (std::size_t j = first; j < end;) {
    const std::size_t slot = j % block_size;
    const int64_t block_offset = layout.offset(block_table[j / block_size], static_cast<int64_t>(kv_head), 0, 0);
    const std::size_t n = std::min(block_size - slot, end - j);
    for (std::size_t i = 0; i < n; ++i) {
      k_rows[j - first + i] = args.k_pool + block_offset + static_cast<int64_t>((slot + i) * head_dim);
      v_rows[j - first + i] = args.v_pool + block_offset + static_cast<int64_t>((slot + i) * head_dim);
    }
    j += n;
  }
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
  const auto num_heads = static_cast<std::size_t>(args.num_heads);
  const auto num_kv_heads = static_cast<std::size_t>(args.layout.num_kv_heads);
  const auto head_dim = static_cast<std::size_t>(args.layout.head_dim);
  PG_CHECK(num_kv_heads > 0 && num_heads % num_kv_heads == 0, "{} query heads for {} KV heads", num_heads,
           num_kv_heads);
  PG_CHECK(head_dim <= kMaxAttentionHeadDim, "head dim {} above the CPU attention's {}", head_dim,
           kMaxAttentionHeadDim);
  const std::size_t group = num_heads / num_kv_heads;
  const std::vector<QueryTile> tiles = query_tiles(args);
  // A task is one tile of tokens, one KV head and the query heads that read it, kMaxHeads
  // at a time: each K and V row is read once for all of them. With few tiles (decode), one
  // query head per task so that every thread has work. Tasks go KV head by KV head, so the
  // tasks side by side read the same rows. None of it changes a head's arithmetic.
  constexpr std::size_t kMaxHeads = 3;
  const std::size_t units = tiles.size() * num_kv_heads;
  const std::size_t heads_per_task = units >= 4 * pool.num_threads() ? group : 1;
  const std::size_t tasks_per_unit = (group + heads_per_task - 1) / heads_per_task;

  pool.run(units * tasks_per_unit, [&](std::size_t task, std::size_t) {
    const std::size_t unit = task / tasks_per_unit;
    const std::size_t kv_head = unit / tiles.size();
    const QueryTile& tile = tiles[unit % tiles.size()];
    const std::size_t first_head = (task % tasks_per_unit) * heads_per_task;
    std::array<TileToken, kTileTokens> tokens;
    std::size_t first = SIZE_MAX, end = 0;
    for (std::size_t i = 0; i < tile.num_tokens; ++i) {
      tokens[i] = visible_positions(args, tile.first_token + i, tile.seq);
      first = std::min(first, tokens[i].first);
      end = std::max(end, tokens[i].end);
    }
    std::vector<const Kv*> k_rows, v_rows;
    gather_rows(args, tile.seq, kv_head, first, end, k_rows, v_rows);
    for (std::size_t i = 0; i < tile.num_tokens; ++i) tokens[i].first -= first, tokens[i].end -= first;
    for (std::size_t g = first_head; g < std::min(group, first_head + heads_per_task); g += kMaxHeads) {
      const std::size_t head = kv_head * group + g;
      for (std::size_t i = 0; i < tile.num_tokens; ++i) {
        const std::size_t row = ((tile.first_token + i) * num_heads + head) * head_dim;
        tokens[i].q = args.q + row;
        tokens[i].out = args.out + row;
      }
      attend_tile(std::span<const TileToken>(tokens.data(), tile.num_tokens),
                  static_cast<int>(std::min({kMaxHeads, group - g, first_head + heads_per_task - g})), k_rows.data(),
                  v_rows.data(), head_dim, args.scale, args.softcap);
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
