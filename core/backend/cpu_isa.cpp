#include "backend/cpu_isa.h"

namespace pagedgen::cpu {

CpuIsa best_cpu_isa() {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuIsa::kAvx2;
#endif
  return CpuIsa::kGeneric;
}

std::string cpu_isa_name(CpuIsa isa) { return isa == CpuIsa::kAvx2 ? "avx2" : "generic"; }

std::optional<CpuIsa> parse_cpu_isa(std::string_view name) {
  if (name == "generic") return CpuIsa::kGeneric;
  if (name == "avx2") return CpuIsa::kAvx2;
  return std::nullopt;
}

}  // namespace pagedgen::cpu
