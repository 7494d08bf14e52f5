// A quantized weight matrix kept quantized for the CPU's fast path, regrouped so the int8
// kernels (cpu/quant_gemm.h) read one 32-weight block of 16 output rows together and
// produce 16 outputs per step. Nothing is expanded: a record holds the 16 rows' scales as
// floats and their integers as stored (4-bit planes plus high-bit planes, or bytes), about
// 1.1-1.3x the file's bytes.
//
// The integers are interleaved by "step" of 4 weights, so that one 32-bit lane holds 4
// consecutive weights of one row and a vector of lanes covers many rows at once: a
// dot-product instruction (vpdpbusd, or vpmaddubsw + vpmaddwd) against the 4 activation
// bytes of that step, broadcast to every lane, adds each row's 4 products to its own lane.
// Eight steps make a block, and each lane ends with its row's exact block sum: no
// horizontal reduction anywhere.
//
//   step s (0..7) = weights 4s..4s+3 of the block;   lane c = row 16g + c of the group
//
// Record (group g = rows 16g..16g+15, block b = columns 32b..32b+31), fields by format:
//   scale   d[16]           scale per row
//   scale   m[16]           added min per row                       (has_min)
//   int32   sub[2][16]      integer scale of weights 0-15, 16-31    (has_sub_scales)
//   uint8   qs[4][16][4]    step pair j, row c, byte t: low nibble = bits 0-3 of weight
//                           8j + t (step 2j), high nibble = of weight 8j + 4 + t (step 2j+1)
//   uint32  qh[16]          row c: bit u of byte t = bit 4 of weight 4u + t   (5, 6 bits)
//   uint32  qh2[16]         row c: bit u of byte t = bit 5 of weight 4u + t   (6 bits)
//   uint8   q8[8][16][4]    step s, row c, byte t: weight 4s + t plus 128      (8 bits)
// A scale is a float16 where the file's scales are (the formats of 32-weight blocks: exact,
// and the record is then no bigger than the file's blocks), else a float (the K formats,
// whose d is a float16 times a 6-bit scale). 8-bit weights are stored plus 128 (unsigned, as vpdpbusd wants them), so
// the integer subtracted from every stored weight is weight_offset(): the format's offset, plus 128 for 8 bits. Rows
// past the matrix's last (in the last group) are zeros.
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
  uint32_t bytes = 0;        // of a whole record
  bool half_scales = false;  // d and m are float16 (else float)
};

PackedLayout packed_layout(const QuantFormat& format);

class PackedMatrix {
 public:
  static constexpr std::size_t kGroupRows = 16;

  // Packs `data`: a (rows, cols) tensor stored as `type`, which must have a quant_format and
  // cols a multiple of its block. Parallel over groups of rows.
  PackedMatrix(GgmlType type, const uint8_t* data, std::size_t rows, std::size_t cols);

  GgmlType type() const { return type_; }
  const QuantFormat& format() const { return format_; }
  const PackedLayout& layout() const { return layout_; }
  // Subtracted from every stored integer: weight = d * sub * (stored - weight_offset()) [+ m].
  int32_t weight_offset() const { return format_.offset + (format_.bits == 8 ? 128 : 0); }
  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }
  std::size_t num_blocks() const { return cols_ / 32; }
  std::size_t num_groups() const { return (rows_ + kGroupRows - 1) / kGroupRows; }
  std::size_t bytes() const { return num_groups() * num_blocks() * layout_.bytes; }

  // The record of group `group`, block `block`; a group's records follow each other.
  const uint8_t* record(std::size_t group, std::size_t block) const {
    return data_.get() + (group * num_blocks() + block) * layout_.bytes;
  }

  // The 32 stored integers of row c (0..15) of a record, before weight_offset(), in
  // order: one call per record row, so the portable path pays no call per weight.
  void stored_weights(const uint8_t* record, std::size_t c, int32_t (&q)[32]) const;
  // Row c's d and m (0 without a min) in a record, as floats.
  float scale(const uint8_t* record, std::size_t c) const;
  float min(const uint8_t* record, std::size_t c) const;

  // Row `row` as floats (cols), the same values dequantize() gives: the embedding lookup.
  void dequantize_row(std::size_t row, float* out) const;

 private:
  GgmlType type_;
  QuantFormat format_;
  PackedLayout layout_;
  std::size_t rows_;
  std::size_t cols_;
  struct FreeBytes {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t[], FreeBytes> data_;  // 64-byte aligned
};

}  // namespace pagedgen
