// One tile of quant_gemm (quant_gemm.h): up to kMaxTileRows activation rows times one group
// of 8 weight rows, over every block. Each instruction-set path implements it.
#pragma once

#include <cstddef>

#include "model/packed_matrix.h"
#include "backend/q8_activations.h"

namespace pagedgen::cpu {

constexpr std::size_t kMaxTileRows = 4;

struct QuantTile {
  const Q8Block* x;        // the tile's first row; rows follow every w.num_blocks() blocks
  std::size_t num_rows;    // 1..kMaxTileRows
  std::size_t group;       // of w
  float* y;                // output (first row, column 8 * group)
  std::size_t y_stride;    // w.rows()
  std::size_t num_cols;    // 1..8: columns of the group inside the matrix
};

void quant_tile_generic(const PackedMatrix& w, const QuantTile& tile);
void quant_tile_avx2(const PackedMatrix& w, const QuantTile& tile);

}  // namespace pagedgen::cpu
