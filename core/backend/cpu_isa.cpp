#include "backend/cpu_isa.h"

#include <array>

namespace pagedgen::cpu {

namespace {

constexpr std::array<CpuIsa, 4> kAll = {CpuIsa::kGeneric, CpuIsa::kAvx2, CpuIsa::kAvxVnni, CpuIsa::kAvx512Vnni};
constexpr std::array<std::string_view, 4> kNames = {"generic", "avx2", "avx-vnni", "avx512-vnni"};

}  // namespace

bool cpu_supports(CpuIsa isa) {
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_supports also checks that the operating system saves the vector state.
  const bool avx2 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  switch (isa) {
    case CpuIsa::kGeneric: return true;
    case CpuIsa::kAvx2: return avx2;
    case CpuIsa::kAvxVnni: return avx2 && __builtin_cpu_supports("avxvnni");
    case CpuIsa::kAvx512Vnni:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  }
  return false;
#else
  return isa == CpuIsa::kGeneric;
#endif
}

CpuIsa best_cpu_isa() {
  for (auto it = kAll.rbegin(); it != kAll.rend(); ++it)
    if (cpu_supports(*it)) return *it;
  return CpuIsa::kGeneric;
}

std::vector<CpuIsa> supported_cpu_isas() {
  std::vector<CpuIsa> isas;
  for (CpuIsa isa : kAll)
    if (cpu_supports(isa)) isas.push_back(isa);
  return isas;
}

std::string cpu_isa_name(CpuIsa isa) { return std::string(kNames[static_cast<std::size_t>(isa)]); }

std::optional<CpuIsa> parse_cpu_isa(std::string_view name) {
  for (std::size_t i = 0; i < kAll.size(); ++i)
    if (kNames[i] == name) return kAll[i];
  return std::nullopt;
}

std::vector<std::string> cpu_isa_names() { return {kNames.begin(), kNames.end()}; }

}  // namespace pagedgen::cpu
