// Files for fuzz targets whose readers take a path: bytes written to an in-memory file
// (memfd) that the reader opens as /proc/self/fd/N, or to a scratch directory on tmpfs for
// readers that take a model directory. One of each per process, reused for every input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

namespace pagedgen::fuzz {

// The path of an in-memory file that now holds exactly `bytes`.
std::filesystem::path memory_file(std::string_view bytes);

// An empty scratch directory (emptied again on every call), under /dev/shm when it exists.
std::filesystem::path scratch_dir();

// Writes `bytes` to `path`, replacing what was there.
void write_bytes(const std::filesystem::path& path, std::string_view bytes);

inline std::string_view as_text(const uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace pagedgen::fuzz
