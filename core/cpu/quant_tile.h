// One tile of quant_gemm (quant_gemm.h): a few activation rows times one group of 16
// weight rows, over every block. Each instruction-set path implements it with the same
// integer sums and the same float chain, so all of them give the same bits.
#pragma once

#include <cstddef>

#include "cpu/cpu_isa.h"
#include "cpu/q8_activations.h"
#include "model/packed_matrix.h"

namespace pagedgen::cpu {

struct QuantTile {
  const Q8Block* x;      // the tile's first row; rows follow every w.num_blocks() blocks
  std::size_t num_rows;  // 1..the kernel's max_rows
  std::size_t group;     // of w
  float* y;              // output (first row, column 16 * group)
  std::size_t y_stride;  // w.rows()
  std::size_t num_cols;  // 1..16: rows of w in the group (fewer only in the last group)
  bool first_pass;       // the group's records come from memory (later row tiles find them cached)
};

struct QuantKernel {
  void (*run)(const PackedMatrix& w, const QuantTile& tile);
  std::size_t max_rows;  // activation rows per tile, as many as its registers hold
};

QuantKernel quant_kernel_generic();
QuantKernel quant_kernel_avx2();
QuantKernel quant_kernel_avx_vnni();
QuantKernel quant_kernel_avx512_vnni();

// The kernel of `isa` (which the CPU must support: cpu_isa.h).
QuantKernel quant_kernel(CpuIsa isa);

}  // namespace pagedgen::cpu
