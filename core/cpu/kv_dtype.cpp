#include "cpu/kv_dtype.h"

namespace pagedgen {

std::size_t kv_dtype_bytes(KvDtype dtype) { return dtype == KvDtype::kFloat32 ? sizeof(float) : sizeof(uint16_t); }

std::string kv_dtype_name(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kFloat32:
      return "float32";
    case KvDtype::kFloat16:
      return "float16";
    case KvDtype::kBFloat16:
      return "bfloat16";
  }
  return "float32";
}

std::optional<KvDtype> parse_kv_dtype(std::string_view name) {
  if (name == "float32") return KvDtype::kFloat32;
  if (name == "float16") return KvDtype::kFloat16;
  if (name == "bfloat16") return KvDtype::kBFloat16;
  return std::nullopt;
}

}  // namespace pagedgen
