// The CPU's fast-path matrix product: int8 activations (q8_activations.h) times weights kept
// quantized (packed_matrix.h). Output element (r, c) is, over the blocks b of the row, in
// order b = 0, 1, ...:
//
//   h_k  = sum over i in half k (weights 16k..16k+15) of stored[c][b][i] * x.q[r][b][i]
//   isum = sub0 * (h_0 - offset * x.qsum0) + sub1 * (h_1 - offset * x.qsum1)      (exact;
//          sub = 1 but for Q6_K, offset = PackedMatrix::weight_offset())
//   acc  = fma(d[c][b] * x.d[r][b], float(isum), acc)
//   acc  = fma(m[c][b], x.s[r][b], acc)                      (formats with a min only)
//
// Integer sums are exact and each output is one fixed chain of float operations, so the
// result depends on that row and column alone (batch invariance by construction) and is
// the same bits on every instruction-set path.
#pragma once

#include <cstddef>
#include <span>

#include "backend/cpu_thread_pool.h"
#include "cpu/cpu_isa.h"
#include "cpu/q8_activations.h"
#include "model/packed_matrix.h"

namespace pagedgen::cpu {

// One product of a quant_gemm call: y (rows, w->rows()) = x @ w^T.
struct QuantProduct {
  const PackedMatrix* w;
  float* y;
};

// Every product of `products` (matrices of one input width, x: rows x w->num_blocks()
// blocks) in one parallel region over groups of 16 w rows, so that small matrices that
// share an input (q, k, v; gate, up) keep every thread busy with one hand-off. `isa` must
// be one the CPU supports.
void quant_gemm(const Q8Block* x, std::size_t rows, std::span<const QuantProduct> products, CpuThreadPool& pool,
                CpuIsa isa);

// y (rows, w.rows()) = x (rows, w.num_blocks() blocks) @ w^T.
inline void quant_gemm(const Q8Block* x, std::size_t rows, const PackedMatrix& w, float* y, CpuThreadPool& pool,
                       CpuIsa isa) {
  const QuantProduct product{&w, y};
  quant_gemm(x, rows, std::span(&product, 1), pool, isa);
}

}  // namespace pagedgen::cpu
