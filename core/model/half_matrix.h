// A float16 or bfloat16 weight matrix kept as stored, for the CPU's fast path: half the
// memory (and the bytes read) of its float32 form. The fast path's GEMM (cpu/cpu_gemm.h)
// converts each value exactly as it reads it, so its products are the same bits as the
// exact path's on the dequantized matrix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/ggml_type.h"
#include "util/half.h"

namespace pagedgen {

class HalfMatrix {
 public:
  // Copies `data`: a (rows, cols) tensor stored as F16 or BF16, little-endian.
  HalfMatrix(GgmlType type, const uint8_t* data, std::size_t rows, std::size_t cols);

  bool is_bfloat16() const { return type_ == GgmlType::BF16; }
  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }
  std::size_t bytes() const { return bits_.size() * sizeof(uint16_t); }
  // The values (rows, cols) as their stored type; each null unless the matrix is of it.
  const Float16* float16() const;
  const BFloat16* bfloat16() const;

  // Row `row` as floats (cols), exactly: the embedding lookup.
  void dequantize_row(std::size_t row, float* out) const;

 private:
  GgmlType type_;
  std::size_t rows_;
  std::size_t cols_;
  std::vector<uint16_t> bits_;
};

}  // namespace pagedgen
