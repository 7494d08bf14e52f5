#include "cpu/cpu_gemm.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "cpu/fixed_order_dot.h"

namespace pagedgen::cpu {

namespace {

// Where a tile works and what it does with its accumulators. A long K is cut into slices
// so that the tile's x and w rows stay in L1; between slices the 8-lane accumulators rest
// in `partial`, bit for bit, so the slicing never changes an element's operations.
struct TileSpan {
  std::size_t ld;        // in_features: row stride of x and w
  std::size_t k_begin;   // a multiple of 8
  std::size_t k_end;     // a multiple of 8, or in_features for the last slice
  std::size_t y_stride;  // out_features
  float* partial;        // (kCols, kMaxRows, 8) accumulators between slices; unused with one slice
  bool first;            // start from zero (else load partial)
  bool last;             // reduce, add the K tail and write y (else store partial)
};

constexpr int kMaxRows = 4;

// A register tile: kRows x rows by kCols w rows, one 8-lane accumulator per output
// element. Each element sees exactly the operations of dot_fixed_order, so tiles of any
// shape (and the edge tiles) agree bit for bit.
template <typename W, int kRows, int kCols>
void tile(const float* x, const W* w, float* y, const TileSpan& span) {
  const std::size_t ld = span.ld;
#if PAGEDGEN_CPU_AVX2
  // The unroll pragmas keep the tile in registers (plain -O2 leaves these loops rolled and
  // the accumulators in memory).
  __m256 acc[kRows][kCols];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < kCols; ++c)
      acc[r][c] = span.first ? _mm256_setzero_ps() : _mm256_loadu_ps(span.partial + (c * kMaxRows + r) * 8);
  std::size_t k = span.k_begin;
  for (; k + 8 <= span.k_end; k += 8) {
    // Every w and x vector is loaded once per k step; the side with fewer vectors stays in
    // registers (the empty asm statements stop GCC from folding loads into each FMA, which
    // would make the tile load-bound: 16 loads per 12 FMAs instead of 7).
    if constexpr (kRows <= kCols) {
      __m256 xv[kRows];
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        xv[r] = _mm256_loadu_ps(x + r * ld + k);
        asm("" : "+x"(xv[r]));
      }
#pragma GCC unroll 8
      for (int c = 0; c < kCols; ++c) {
        __m256 wv = load8(w + c * ld + k);
        asm("" : "+x"(wv));
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r) acc[r][c] = _mm256_fmadd_ps(xv[r], wv, acc[r][c]);
      }
    } else {
      __m256 wv[kCols];
#pragma GCC unroll 8
      for (int c = 0; c < kCols; ++c) {
        wv[c] = load8(w + c * ld + k);
        asm("" : "+x"(wv[c]));
      }
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        __m256 xv = _mm256_loadu_ps(x + r * ld + k);
        asm("" : "+x"(xv));
#pragma GCC unroll 8
        for (int c = 0; c < kCols; ++c) acc[r][c] = _mm256_fmadd_ps(xv, wv[c], acc[r][c]);
      }
    }
  }
  if (!span.last) {
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < kCols; ++c) _mm256_storeu_ps(span.partial + (c * kMaxRows + r) * 8, acc[r][c]);
    return;
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
    for (int c = 0; c < kCols; ++c) {
      float s = reduce_m256(acc[r][c]);
      for (std::size_t t = k; t < span.k_end; ++t) s = std::fma(x[r * ld + t], to_float(w[c * ld + t]), s);
      y[r * span.y_stride + c] = s;
    }
  }
#else
  // The same operations one lane at a time (fixed_order_dot.h).
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) {
      Lanes8 acc;
      if (!span.first) std::copy_n(span.partial + (c * kMaxRows + r) * 8, 8, acc.lane);
      std::size_t k = span.k_begin;
      for (; k + 8 <= span.k_end; k += 8) fma_lanes8(acc, x + r * ld + k, w + c * ld + k);
      if (!span.last) {
        std::copy_n(acc.lane, 8, span.partial + (c * kMaxRows + r) * 8);
        continue;
      }
      float s = reduce_lanes8(acc);
      for (; k < span.k_end; ++k) s = std::fma(x[r * ld + k], to_float(w[c * ld + k]), s);
      y[r * span.y_stride + c] = s;
    }
#endif
}

#if PAGEDGEN_CPU_AVX512
// GCC 12's avx512fintrin.h warns about its own undefined vectors (fixed_order_dot.h).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// AVX-512 builds run blocks of kWideRows x rows by 8 w rows with wide_tile.
constexpr int kWideRows = 6;

// A kWideRows x 8 tile: two w rows' 8-lane accumulators per register (columns 2p in the low
// half, 2p + 1 in the high half). Each element sees exactly the operations of
// dot_fixed_order, as in tile; partial holds (8 columns, kWideRows, 8) accumulators.
template <typename W>
void wide_tile(const float* x, const W* w, float* y, const TileSpan& span) {
  const std::size_t ld = span.ld;
  const auto partial_of = [&](int r, int c) { return span.partial + (c * kWideRows + r) * 8; };
  __m512 acc[kWideRows][4];
#pragma GCC unroll 8
  for (int r = 0; r < kWideRows; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p)
      acc[r][p] = span.first ? _mm512_setzero_ps() : load8_pair(partial_of(r, 2 * p), partial_of(r, 2 * p + 1));
  std::size_t k = span.k_begin;
  for (; k + 8 <= span.k_end; k += 8) {
    __m512 wv[4];
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) wv[p] = load8_pair(w + 2 * p * ld + k, w + (2 * p + 1) * ld + k);
#pragma GCC unroll 8
    for (int r = 0; r < kWideRows; ++r) {
      const __m512 xv = broadcast8(x + r * ld + k);
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) acc[r][p] = _mm512_fmadd_ps(xv, wv[p], acc[r][p]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kWideRows; ++r) {
    if (!span.last) {
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        _mm256_storeu_ps(partial_of(r, 2 * p), _mm512_castps512_ps256(acc[r][p]));
        _mm256_storeu_ps(partial_of(r, 2 * p + 1),
                         _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[r][p]), 1)));
      }
      continue;
    }
    float sums[8];
    _mm256_storeu_ps(sums, reduce_row_pairs(acc[r]));  // columns 0..7
    for (int c = 0; c < 8; ++c)
      for (std::size_t t = k; t < span.k_end; ++t) sums[c] = std::fma(x[r * ld + t], to_float(w[c * ld + t]), sums[c]);
    std::copy_n(sums, 8, y + r * span.y_stride);
  }
}

#pragma GCC diagnostic pop
#endif

template <typename W>
using TileFn = void (*)(const float*, const W*, float*, const TileSpan&);

// Tile widths by tile height: at most 12 accumulators, so a tile lives in 16 registers.
constexpr std::array<int, kMaxRows + 1> kColsForRows = {0, 8, 6, 4, 3};

template <typename W, int kRows, std::size_t... kCols>
constexpr std::array<TileFn<W>, sizeof...(kCols)> tiles_of_height(std::index_sequence<kCols...>) {
  return {&tile<W, kRows, static_cast<int>(kCols) + 1>...};
}

// kTiles<W>[r][c - 1]: the tile of r rows and c columns, for c up to kColsForRows[r].
template <typename W>
const std::array<std::array<TileFn<W>, 8>, kMaxRows + 1> kTiles = [] {
  std::array<std::array<TileFn<W>, 8>, kMaxRows + 1> t{};
  const auto r1 = tiles_of_height<W, 1>(std::make_index_sequence<8>{});
  const auto r2 = tiles_of_height<W, 2>(std::make_index_sequence<6>{});
  const auto r3 = tiles_of_height<W, 3>(std::make_index_sequence<4>{});
  const auto r4 = tiles_of_height<W, 4>(std::make_index_sequence<3>{});
  std::copy(r1.begin(), r1.end(), t[1].begin());
  std::copy(r2.begin(), r2.end(), t[2].begin());
  std::copy(r3.begin(), r3.end(), t[3].begin());
  std::copy(r4.begin(), r4.end(), t[4].begin());
  return t;
}();

// Rows of a block of wide tiles (none without AVX-512), and the rows of partial sums a
// task keeps per column.
#if PAGEDGEN_CPU_AVX512
constexpr bool kWideTiles = true;
constexpr std::size_t kWideBlockRows = kWideRows;
template <typename W>
constexpr TileFn<W> kWideTile = &wide_tile<W>;
#else
constexpr bool kWideTiles = false;
constexpr std::size_t kWideBlockRows = kMaxRows;
template <typename W>
constexpr TileFn<W> kWideTile = nullptr;
#endif
constexpr std::size_t kPartialRows = std::max<std::size_t>(kMaxRows, kWideBlockRows);

// Columns per parallel task: a multiple of every tile width (24), sized so the task's w
// rows (cols x in_features floats) stay in a core's L2 while every x row streams past.
std::size_t chunk_cols(std::size_t in_features, std::size_t out_features, std::size_t num_threads) {
  constexpr std::size_t kUnit = 24;
  constexpr std::size_t kL2Bytes = 128 * 1024;
  std::size_t units = std::max<std::size_t>(1, kL2Bytes / (kUnit * in_features * sizeof(float)));
  // Enough tasks to keep every thread busy when out_features is small.
  const std::size_t total_units = (out_features + kUnit - 1) / kUnit;
  units = std::min(units, std::max<std::size_t>(1, total_units / (2 * num_threads)));
  return units * kUnit;
}

// K slice length: a 4-row x tile and a 3-row w tile of K floats fit a 32 KiB L1 up to
// K = 768 or so; longer rows are cut into slices of 512.
std::size_t k_slice(std::size_t in_features) { return in_features <= 768 ? in_features : 512; }

template <typename W>
void gemm_of(const float* x, const W* w, float* y, std::size_t rows, std::size_t in_features, std::size_t out_features,
             CpuThreadPool& pool) {
  if (rows == 0 || out_features == 0) return;
  const std::size_t cols_per_task = chunk_cols(in_features, out_features, pool.num_threads());
  const std::size_t num_tasks = (out_features + cols_per_task - 1) / cols_per_task;
  const std::size_t slice = k_slice(in_features);
  pool.run(num_tasks, [&](std::size_t task, std::size_t) {
    const std::size_t col_begin = task * cols_per_task;
    const std::size_t col_end = std::min(out_features, col_begin + cols_per_task);
    std::vector<float> partial(slice < in_features ? cols_per_task * kPartialRows * 8 : 0);
    for (std::size_t row = 0; row < rows;) {
      // A block of kWideRows rows where AVX-512 runs wide tiles over whole groups of 8
      // columns, else of up to kMaxRows rows in tiles.
      const bool wide = kWideTiles && rows - row >= kWideBlockRows && (col_end - col_begin) % 8 == 0;
      const auto tile_rows = static_cast<int>(std::min<std::size_t>(wide ? kWideBlockRows : kMaxRows, rows - row));
      const auto tile_cols = wide ? 8 : static_cast<std::size_t>(kColsForRows[static_cast<std::size_t>(tile_rows)]);
      const float* x_tile = x + row * in_features;
      for (std::size_t k_begin = 0; k_begin < in_features; k_begin += slice) {
        TileSpan span{.ld = in_features,
                      .k_begin = k_begin,
                      .k_end = std::min(in_features, k_begin + slice),
                      .y_stride = out_features,
                      .partial = nullptr,
                      .first = k_begin == 0,
                      .last = k_begin + slice >= in_features};
        for (std::size_t col = col_begin; col < col_end; col += tile_cols) {
          const std::size_t cols = std::min(tile_cols, col_end - col);
          span.partial = partial.data() + (col - col_begin) * kPartialRows * 8;
          const TileFn<W> run_tile = wide ? kWideTile<W> : kTiles<W>[static_cast<std::size_t>(tile_rows)][cols - 1];
          run_tile(x_tile, w + col * in_features, y + row * out_features + col, span);
        }
      }
      row += static_cast<std::size_t>(tile_rows);
    }
  });
}

}  // namespace

void gemm(const float* x, const float* w, float* y, std::size_t rows, std::size_t in_features, std::size_t out_features,
          CpuThreadPool& pool) {
  gemm_of(x, w, y, rows, in_features, out_features, pool);
}

void gemm(const float* x, const Float16* w, float* y, std::size_t rows, std::size_t in_features,
          std::size_t out_features, CpuThreadPool& pool) {
  gemm_of(x, w, y, rows, in_features, out_features, pool);
}

void gemm(const float* x, const BFloat16* w, float* y, std::size_t rows, std::size_t in_features,
          std::size_t out_features, CpuThreadPool& pool) {
  gemm_of(x, w, y, rows, in_features, out_features, pool);
}

void gemm_reference_order(const float* x, const float* w, float* y, std::size_t rows, std::size_t in_features,
                          std::size_t out_features) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < out_features; ++c)
      y[r * out_features + c] = dot_fixed_order_scalar(x + r * in_features, w + c * in_features, in_features);
}

}  // namespace pagedgen::cpu
