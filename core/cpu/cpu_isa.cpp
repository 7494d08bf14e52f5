#include "cpu/cpu_isa.h"

#include <array>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace pagedgen::cpu {

namespace {

constexpr std::array<CpuIsa, 4> kAll = {CpuIsa::kGeneric, CpuIsa::kAvx2, CpuIsa::kAvxVnni, CpuIsa::kAvx512Vnni};
constexpr std::array<std::string_view, 4> kNames = {"generic", "avx2", "avx-vnni", "avx512-vnni"};

#if defined(__x86_64__) || defined(__i386__)
// F16C (CPUID leaf 1, ECX bit 29) and AVX-VNNI (leaf 7 subleaf 1, EAX bit 4) read from CPUID:
// clang's __builtin_cpu_supports knows neither name. Both use the AVX register state, which
// the avx2 check below already asks the operating system about.
bool has_f16c() {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & (1u << 29)) != 0;
}
bool has_avx_vnni() {
  unsigned a, b, c, d;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a & (1u << 4)) != 0;
}
#endif

}  // namespace

bool cpu_supports(CpuIsa isa) {
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_supports also checks that the operating system saves the vector state.
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
  switch (isa) {
    case CpuIsa::kGeneric:
      return true;
    case CpuIsa::kAvx2:
      return avx2;
    case CpuIsa::kAvxVnni:
      return avx2 && has_avx_vnni();
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
