// Which instruction set the CPU's fast-path kernels use, chosen at run time from the CPU's
// features; another one the CPU has can be forced (--cpu-isa) to check that every path gives
// the same bits. generic is portable C++; avx2 needs AVX2, FMA and F16C; avx-vnni adds the
// VEX-encoded 256-bit VNNI dot products; avx512-vnni needs AVX-512 F/BW/VL and VNNI.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagedgen::cpu {

enum class CpuIsa { kGeneric, kAvx2, kAvxVnni, kAvx512Vnni };

// Whether this CPU (and its operating system) can run `isa`'s kernels.
bool cpu_supports(CpuIsa isa);

// The fastest path this CPU supports: avx512-vnni, else avx-vnni, else avx2, else generic.
CpuIsa best_cpu_isa();

// Every path this CPU supports, generic first.
std::vector<CpuIsa> supported_cpu_isas();

// "generic", "avx2", "avx-vnni", "avx512-vnni"
std::string cpu_isa_name(CpuIsa isa);
std::optional<CpuIsa> parse_cpu_isa(std::string_view name);

// All the names, in CpuIsa order.
std::vector<std::string> cpu_isa_names();

}  // namespace pagedgen::cpu
