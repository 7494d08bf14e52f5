#include "model/half_matrix.h"

#include <cstring>

#include "util/error.h"

namespace pagedgen {

HalfMatrix::HalfMatrix(GgmlType type, const uint8_t* data, std::size_t rows, std::size_t cols)
    : type_(type), rows_(rows), cols_(cols), bits_(rows * cols) {
  PG_CHECK(type == GgmlType::F16 || type == GgmlType::BF16, "{} is not a 16-bit float type", ggml_type_name(type));
  std::memcpy(bits_.data(), data, bits_.size() * sizeof(uint16_t));  // little-endian hosts only, as the readers
}

const Float16* HalfMatrix::float16() const {
  return is_bfloat16() ? nullptr : reinterpret_cast<const Float16*>(bits_.data());
}

const BFloat16* HalfMatrix::bfloat16() const {
  return is_bfloat16() ? reinterpret_cast<const BFloat16*>(bits_.data()) : nullptr;
}

void HalfMatrix::dequantize_row(std::size_t row, float* out) const {
  PG_CHECK(row < rows_, "row {} of a {}-row matrix", row, rows_);
  const uint16_t* bits = bits_.data() + row * cols_;
  for (std::size_t i = 0; i < cols_; ++i) out[i] = is_bfloat16() ? bfloat16_to_float(bits[i]) : half_to_float(bits[i]);
}

}  // namespace pagedgen
