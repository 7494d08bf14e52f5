#include "model/packed_matrix.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "util/error.h"
#include "util/half.h"
#include "util/parallel_for.h"

namespace pagedgen {

namespace {

constexpr std::size_t kRows = PackedMatrix::kGroupRows;

template <typename T>
T* field(uint8_t* record, uint32_t offset) {
  return reinterpret_cast<T*>(record + offset);
}

template <typename T>
T load(const uint8_t* record, uint32_t offset, std::size_t index) {
  T value;
  std::memcpy(&value, record + offset + index * sizeof(T), sizeof(T));
  return value;
}

// Byte of weight i (0..31) of row c in the 4-bit plane, and whether it is the high nibble.
std::size_t nibble_byte(std::size_t c, int i) {
  const auto j = static_cast<std::size_t>(i / 8), t = static_cast<std::size_t>(i % 4);
  return (j * kRows + c) * 4 + t;
}
bool high_nibble(int i) { return i % 8 >= 4; }

// Bit of weight i in a row's qh / qh2 word: byte t = i % 4, bit u = i / 4 (its step).
uint32_t high_bit(int i) { return 8u * static_cast<uint32_t>(i % 4) + static_cast<uint32_t>(i / 4); }

// Row c's scale at `offset`: a float16 (exactly the file's, checked) or a float.
void put_scale(const PackedLayout& layout, uint8_t* record, uint32_t offset, std::size_t c, float value) {
  if (!layout.half_scales) {
    field<float>(record, offset)[c] = value;
    return;
  }
  const uint16_t h = float_to_half(value);
  PG_CHECK(std::isnan(value) || half_to_float(h) == value, "scale {} is not a float16", value);
  field<uint16_t>(record, offset)[c] = h;
}

float get_scale(const PackedLayout& layout, const uint8_t* record, uint32_t offset, std::size_t c) {
  return layout.half_scales ? half_to_float(load<uint16_t>(record, offset, c)) : load<float>(record, offset, c);
}

// Writes block `block` of row `c` (0..15) of a group into its record.
void pack_block(const QuantFormat& format, const PackedLayout& layout, const QuantBlock32& block, std::size_t c,
                uint8_t* record) {
  put_scale(layout, record, 0, c, block.d);
  if (format.has_min) put_scale(layout, record, layout.m, c, block.m);
  if (format.has_sub_scales) {
    field<int32_t>(record, layout.sub)[c] = block.sub_scale[0];
    field<int32_t>(record, layout.sub)[kRows + c] = block.sub_scale[1];
  }
  if (format.bits == 8) {
    uint8_t* q8 = field<uint8_t>(record, layout.q8);
    for (int i = 0; i < 32; ++i)
      q8[(static_cast<std::size_t>(i / 4) * kRows + c) * 4 + static_cast<std::size_t>(i % 4)] =
          static_cast<uint8_t>(static_cast<int>(block.q[i]) + 128);
    return;
  }
  uint8_t* qs = field<uint8_t>(record, layout.qs);
  uint32_t qh = 0, qh2 = 0;
  for (int i = 0; i < 32; ++i) {
    const auto q = static_cast<uint32_t>(static_cast<uint8_t>(block.q[i]));
    qs[nibble_byte(c, i)] |= static_cast<uint8_t>((q & 15u) << (high_nibble(i) ? 4 : 0));
    qh |= ((q >> 4) & 1u) << high_bit(i);
    qh2 |= ((q >> 5) & 1u) << high_bit(i);
  }
  if (format.bits >= 5) field<uint32_t>(record, layout.qh)[c] = qh;
  if (format.bits == 6) field<uint32_t>(record, layout.qh2)[c] = qh2;
}

}  // namespace

PackedLayout packed_layout(const QuantFormat& format) {
  PackedLayout layout;
  layout.half_scales = format.block_elements == 32;  // the file's d and m are float16
  const uint32_t scale_bytes = layout.half_scales ? sizeof(uint16_t) : sizeof(float);
  uint32_t at = kRows * scale_bytes;  // d
  if (format.has_min) {
    layout.m = at;
    at += kRows * scale_bytes;
  }
  if (format.has_sub_scales) {
    layout.sub = at;
    at += 2 * kRows * sizeof(int32_t);
  }
  if (format.bits == 8) {
    layout.q8 = at;
    at += kRows * 32;
  } else {
    layout.qs = at;
    at += kRows * 16;
    if (format.bits >= 5) {
      layout.qh = at;
      at += kRows * sizeof(uint32_t);
    }
    if (format.bits == 6) {
      layout.qh2 = at;
      at += kRows * sizeof(uint32_t);
    }
  }
  layout.bytes = at;
  return layout;
}

void PackedMatrix::FreeBytes::operator()(uint8_t* p) const { std::free(p); }

PackedMatrix::PackedMatrix(GgmlType type, const uint8_t* data, std::size_t rows, std::size_t cols)
    : type_(type), rows_(rows), cols_(cols) {
  const std::optional<QuantFormat> format = quant_format(type);
  PG_CHECK(format.has_value(), "{} cannot be packed for the int8 path", ggml_type_name(type));
  PG_CHECK(cols % format->block_elements == 0, "{} columns are not whole {} blocks", cols, ggml_type_name(type));
  format_ = *format;
  layout_ = packed_layout(format_);
  // aligned_alloc wants a size that is a multiple of the alignment.
  const std::size_t total = std::max<std::size_t>(64, (bytes() + 63) / 64 * 64);
  data_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, total)));
  if (!data_) throw std::bad_alloc();
  std::memset(data_.get(), 0, total);
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

void PackedMatrix::stored_weights(const uint8_t* rec, std::size_t c, int32_t (&q)[32]) const {
  if (format_.bits == 8) {
    for (int i = 0; i < 32; ++i)
      q[i] = rec[layout_.q8 + (static_cast<std::size_t>(i / 4) * kRows + c) * 4 + static_cast<std::size_t>(i % 4)];
    return;
  }
  const uint32_t qh = format_.bits >= 5 ? load<uint32_t>(rec, layout_.qh, c) : 0;
  const uint32_t qh2 = format_.bits == 6 ? load<uint32_t>(rec, layout_.qh2, c) : 0;
  for (int i = 0; i < 32; ++i) {
    const uint8_t byte = rec[layout_.qs + nibble_byte(c, i)];
    uint32_t v = high_nibble(i) ? byte >> 4 : byte & 15u;
    v |= ((qh >> high_bit(i)) & 1u) << 4;
    v |= ((qh2 >> high_bit(i)) & 1u) << 5;
    q[i] = static_cast<int32_t>(v);
  }
}

float PackedMatrix::scale(const uint8_t* rec, std::size_t c) const { return get_scale(layout_, rec, 0, c); }

float PackedMatrix::min(const uint8_t* rec, std::size_t c) const {
  return format_.has_min ? get_scale(layout_, rec, layout_.m, c) : 0.0f;
}

void PackedMatrix::dequantize_row(std::size_t row, float* out) const {
  PG_CHECK(row < rows_, "row {} of a {}-row matrix", row, rows_);
  const std::size_t group = row / kGroupRows;
  const std::size_t c = row % kGroupRows;
  const int shift = format_.bits == 8 ? 128 : 0;  // the stored bytes of 8-bit weights are q + 128
  for (std::size_t b = 0; b < num_blocks(); ++b, out += 32) {
    const uint8_t* rec = record(group, b);
    QuantBlock32 block{};
    block.d = scale(rec, c);
    block.m = min(rec, c);
    block.sub_scale[0] = static_cast<int16_t>(format_.has_sub_scales ? load<int32_t>(rec, layout_.sub, c) : 1);
    block.sub_scale[1] = static_cast<int16_t>(format_.has_sub_scales ? load<int32_t>(rec, layout_.sub, kRows + c) : 1);
    int32_t q[32];
    stored_weights(rec, c, q);
    for (int i = 0; i < 32; ++i) block.q[i] = static_cast<int8_t>(q[i] - shift);
    for (int i = 0; i < 32; ++i) out[i] = quant_weight(format_, block, i);
  }
}

}  // namespace pagedgen
