// Fingerprints that tell whether a file is the one an interrupted run used (--resume):
// its size plus a 64-bit FNV-1a hash (util/fnv_hash.h) of its bytes, all of them or only a
// head. Written as text, e.g. "bytes=1234 fnv1a64=0123456789abcdef".
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>

namespace pagedgen {

// Size and hash of the first `max_hashed_bytes` bytes (all of them by default). Throws
// Error when the file cannot be read.
std::string fingerprint_file(const std::filesystem::path& path,
                             uint64_t max_hashed_bytes = std::numeric_limits<uint64_t>::max());

// Bytes hashed of each model file: a GGUF file's header, metadata and tensor table (the
// vocabulary included, for small models) lie in its first megabytes; the size covers the rest.
inline constexpr uint64_t kModelHeadBytes = uint64_t{8} << 20;

// A model file: fingerprint_file over its first kModelHeadBytes. An HF directory: the
// same for each regular file in it, by name ("name: bytes=... fnv1a64=...; ...").
std::string fingerprint_model(const std::filesystem::path& path);

}  // namespace pagedgen
