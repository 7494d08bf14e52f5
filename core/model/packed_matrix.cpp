#include "model/packed_matrix.h"

#include <cstring>
#include <vector>

#include "util/error.h"
#include "util/parallel_for.h"

namespace pagedgen {

namespace {

template <typename T>
T* field(uint8_t* record, uint32_t offset) {
  return reinterpret_cast<T*>(record + offset);
}

template <typename T>
const T* field(const uint8_t* record, uint32_t offset) {
  return reinterpret_cast<const T*>(record + offset);
}

// Writes block `block` of row `c` (0..7) of a group into its record.
void pack_block(const QuantFormat& format, const PackedLayout& layout, const QuantBlock32& block, std::size_t c,
                uint8_t* record) {
  field<float>(record, 0)[c] = block.d;
  if (format.has_min) field<float>(record, layout.m)[c] = block.m;
  if (format.has_sub_scales) {
    field<int32_t>(record, layout.sub)[c] = block.sub_scale[0];
    field<int32_t>(record, layout.sub)[8 + c] = block.sub_scale[1];
  }
  if (format.bits == 8) {
    std::memcpy(field<int8_t>(record, layout.q8) + 32 * c, block.q, 32);
    return;
  }
  uint8_t* qs = field<uint8_t>(record, layout.qs) + 16 * c;
  uint32_t qh = 0, qh2 = 0;
  for (int i = 0; i < 32; ++i) {
    const auto q = static_cast<uint32_t>(block.q[i]);
    if (i < 16) qs[i] = static_cast<uint8_t>(q & 15);
    else qs[i - 16] = static_cast<uint8_t>(qs[i - 16] | ((q & 15) << 4));
    qh |= ((q >> 4) & 1u) << i;
    qh2 |= ((q >> 5) & 1u) << i;
  }
  if (format.bits >= 5) field<uint32_t>(record, layout.qh)[c] = qh;
  if (format.bits == 6) field<uint32_t>(record, layout.qh2)[c] = qh2;
}

}  // namespace

PackedLayout packed_layout(const QuantFormat& format) {
  PackedLayout layout;
  uint32_t at = 8 * sizeof(float);  // d
  if (format.has_min) { layout.m = at; at += 8 * sizeof(float); }
  if (format.has_sub_scales) { layout.sub = at; at += 16 * sizeof(int32_t); }
  if (format.bits == 8) {
    layout.q8 = at;
    at += 8 * 32;
  } else {
    layout.qs = at;
    at += 8 * 16;
    if (format.bits >= 5) { layout.qh = at; at += 8 * sizeof(uint32_t); }
    if (format.bits == 6) { layout.qh2 = at; at += 8 * sizeof(uint32_t); }
  }
  layout.bytes = at;
  return layout;
}

PackedMatrix::PackedMatrix(GgmlType type, const uint8_t* data, std::size_t rows, std::size_t cols)
    : type_(type), rows_(rows), cols_(cols) {
  const std::optional<QuantFormat> format = quant_format(type);
  PG_CHECK(format.has_value(), "{} cannot be packed for the int8 path", ggml_type_name(type));
  PG_CHECK(cols % format->block_elements == 0, "{} columns are not whole {} blocks", cols, ggml_type_name(type));
  format_ = *format;
  layout_ = packed_layout(format_);
  data_ = std::make_unique<uint8_t[]>(bytes());
  std::memset(data_.get(), 0, bytes());
  const std::size_t row_bytes = cols / format_.block_elements * format_.block_bytes;
  const std::size_t nb = num_blocks();
  parallel_for(num_groups(), default_num_threads(), [&](std::size_t group) {
    std::vector<QuantBlock32> blocks(nb);
    for (std::size_t c = 0; c < kGroupRows && group * kGroupRows + c < rows_; ++c) {
      decode_quant_blocks(type_, data + (group * kGroupRows + c) * row_bytes, cols_, blocks.data());
      for (std::size_t b = 0; b < nb; ++b)
        pack_block(format_, layout_, blocks[b], c, data_.get() + (group * nb + b) * layout_.bytes);
    }
  });
}

void PackedMatrix::dequantize_row(std::size_t row, float* out) const {
  PG_CHECK(row < rows_, "row {} of a {}-row matrix", row, rows_);
  const std::size_t group = row / kGroupRows;
  const std::size_t c = row % kGroupRows;
  for (std::size_t b = 0; b < num_blocks(); ++b, out += 32) {
    const uint8_t* rec = record(group, b);
    QuantBlock32 block{};
    block.d = field<float>(rec, 0)[c];
    block.m = format_.has_min ? field<float>(rec, layout_.m)[c] : 0.0f;
    block.sub_scale[0] = static_cast<int16_t>(format_.has_sub_scales ? field<int32_t>(rec, layout_.sub)[c] : 1);
    block.sub_scale[1] = static_cast<int16_t>(format_.has_sub_scales ? field<int32_t>(rec, layout_.sub)[8 + c] : 1);
    for (int i = 0; i < 32; ++i) {
      if (format_.bits == 8) {
        block.q[i] = field<int8_t>(rec, layout_.q8)[32 * c + i];
        continue;
      }
      const uint8_t byte = field<uint8_t>(rec, layout_.qs)[16 * c + i % 16];
      uint32_t q = i < 16 ? byte & 15u : byte >> 4;
      if (format_.bits >= 5) q |= ((field<uint32_t>(rec, layout_.qh)[c] >> i) & 1u) << 4;
      if (format_.bits == 6) q |= ((field<uint32_t>(rec, layout_.qh2)[c] >> i) & 1u) << 5;
      block.q[i] = static_cast<int8_t>(q);
    }
    for (int i = 0; i < 32; ++i) out[i] = quant_weight(format_, block, i);
  }
}

}  // namespace pagedgen
