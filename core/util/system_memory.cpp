#include "util/system_memory.h"

#include <fstream>
#include <string>

namespace pagedgen {

std::optional<uint64_t> available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return std::nullopt;
}

}  // namespace pagedgen
