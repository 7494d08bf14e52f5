// What the machine can give this process: memory available now (Linux MemAvailable), for
// refusing a request for more memory up front instead of being killed halfway.
#pragma once

#include <cstdint>
#include <optional>

namespace pagedgen {

// Bytes of memory available for new allocations without swapping; nullopt where unknown.
std::optional<uint64_t> available_memory_bytes();

}  // namespace pagedgen
