// The element type of the CPU backend's KV pools: float32 (the exact path's), float16 or
// bfloat16 (half the memory and half the bytes attention reads). A K or V value is rounded
// once, to nearest even, when it is written, and read back exactly, so attention is the
// same fixed-order float arithmetic on the rounded values: outputs stay the same at every
// block size, with sharing on or off, on every thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/half.h"

namespace pagedgen {

enum class KvDtype { kFloat32, kFloat16, kBFloat16 };

std::size_t kv_dtype_bytes(KvDtype dtype);
// "float32", "float16", "bfloat16"
std::string kv_dtype_name(KvDtype dtype);
std::optional<KvDtype> parse_kv_dtype(std::string_view name);

// The pools hold float, Float16 or BFloat16 values (util/half.h).

}  // namespace pagedgen
