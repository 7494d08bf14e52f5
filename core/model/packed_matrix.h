// A quantized weight matrix kept quantized for the CPU's fast path, regrouped so the int8
// kernels (backend/quant_gemm.h) read the same 32-weight block of 8 output rows together and
// produce 8 outputs per step. Nothing is expanded: a record holds the 8 rows' scales as
// floats and their integers as stored (4-bit planes plus high-bit planes, or int8), about
// 1.1-1.3x the file's bytes.
//
// Record (group g = rows 8g..8g+7, block b = columns 32b..32b+31), fields present by format:
//   float   d[8]            scale per row
//   float   m[8]            added min per row                     (has_min)
//   int32   sub[2][8]       integer scale of weights 0-15, 16-31  (has_sub_scales)
//   uint8   qs[8][16]       low 4 bits: weight i in qs[i] & 15, weight i + 16 in qs[i] >> 4
//   uint32  qh[8]           bit 4 of weight i in bit i             (5 and 6 bits)
//   uint32  qh2[8]          bit 5 of weight i in bit i             (6 bits)
//   int8    q8[8][32]       the weights                            (8 bits, instead of qs)
// Rows past the matrix's last (in the last group) are zeros.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "model/ggml_type.h"
#include "model/quant_blocks.h"

namespace pagedgen {

// Byte offsets of the fields of one record; 0 marks an absent field (d is always at 0).
struct PackedLayout {
  uint32_t m = 0, sub = 0, qs = 0, qh = 0, qh2 = 0, q8 = 0;
  uint32_t bytes = 0;  // of a whole record
};

PackedLayout packed_layout(const QuantFormat& format);

class PackedMatrix {
 public:
  static constexpr std::size_t kGroupRows = 8;

  // Packs `data`: a (rows, cols) tensor stored as `type`, which must have a quant_format and
  // cols a multiple of its block. Parallel over groups of rows.
  PackedMatrix(GgmlType type, const uint8_t* data, std::size_t rows, std::size_t cols);

  GgmlType type() const { return type_; }
  const QuantFormat& format() const { return format_; }
  const PackedLayout& layout() const { return layout_; }
  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }
  std::size_t num_blocks() const { return cols_ / 32; }
  std::size_t num_groups() const { return (rows_ + kGroupRows - 1) / kGroupRows; }
  std::size_t bytes() const { return num_groups() * num_blocks() * layout_.bytes; }

  // The record of group `group`, block `block`; a group's records follow each other.
  const uint8_t* record(std::size_t group, std::size_t block) const {
    return data_.get() + (group * num_blocks() + block) * layout_.bytes;
  }

  // Row `row` as floats (cols), the same values dequantize() gives: the embedding lookup.
  void dequantize_row(std::size_t row, float* out) const;

 private:
  GgmlType type_;
  QuantFormat format_;
  PackedLayout layout_;
  std::size_t rows_;
  std::size_t cols_;
  std::unique_ptr<uint8_t[]> data_;
};

}  // namespace pagedgen
