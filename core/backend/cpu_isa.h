// Which instruction set the CPU's fast-path kernels use, chosen at run time from the CPU's
// features; a lower one can be forced (--cpu-isa) to check that every path gives the same
// bits. generic is portable C++; avx2 needs AVX2 and FMA.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace pagedgen::cpu {

enum class CpuIsa { kGeneric, kAvx2 };

// The best this CPU supports (and this build has kernels for).
CpuIsa best_cpu_isa();

// "generic", "avx2"
std::string cpu_isa_name(CpuIsa isa);
std::optional<CpuIsa> parse_cpu_isa(std::string_view name);

}  // namespace pagedgen::cpu
