#include "model/raw_tensor.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "model/dequant.h"
#include "util/error.h"

namespace pagedgen {

const RawTensor* find_raw_tensor(std::span<const RawTensor> tensors, std::string_view name) {
  const auto it = std::ranges::find(tensors, name, &RawTensor::name);
  return it == tensors.end() ? nullptr : &*it;
}

void check_raw_tensor(const RawTensor& raw, std::span<const uint64_t> shape, const std::string& source) {
  if (!std::ranges::equal(raw.shape, shape))
    fail("{}: tensor '{}' has shape {}, expected {} for this model's config", source, raw.stored_name,
         fmt::join(raw.shape, "x"), fmt::join(shape, "x"));
  if (!can_dequantize(static_cast<GgmlType>(raw.raw_type)))
    fail(
        "{}: tensor '{}' has type {}, which pagedgen cannot load (supported: F32, F16, BF16, "
        "Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)",
        source, raw.stored_name, ggml_type_name(raw.raw_type));
}

void fail_missing_tensor(const std::string& source, std::string_view name, std::string_view architecture) {
  fail("{}: tensor '{}' is missing; the file does not hold a complete {} model", source, name, architecture);
}

}  // namespace pagedgen
