// Fingerprints that tell whether a file is the one an interrupted run used (--resume): its
// size plus a 64-bit FNV-1a hash (util/fnv_hash.h) of its bytes, written as text, e.g.
// "bytes=1234 fnv1a64=0123456789abcdef". An input is hashed whole. A model's weights file
// too when it is small; a large one is hashed over its head (a GGUF file's header,
// metadata and tensor table; a safetensors header) and over samples spread evenly over
// the whole file, so that weights changed anywhere change it, at a bounded cost:
//
//   file:  [ head: 16 MiB ][....s....s....s....s....s....s....s....s ... s....s]  s: 4 KiB
//          1024 samples evenly spaced from the end of the head; the last one ends at EOF
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>

namespace pagedgen {

// One pass over a whole file: its size, its hash and its lines (as io/line_reader.h
// counts them: a last line without a newline counts, an empty piece after it does not).
struct FileScan {
  uint64_t num_bytes = 0;
  uint64_t hash = 0;  // FNV-1a of every byte, finalized (splitmix64)
  uint64_t num_lines = 0;

  std::string fingerprint() const;  // "bytes=N fnv1a64=X"
};
// Throws Error naming the file and the reason when it cannot be read.
FileScan scan_file(const std::filesystem::path& path);

// Size and hash of the first `max_hashed_bytes` bytes (all of them by default). Throws
// Error, naming the file and the reason, when it cannot be read.
std::string fingerprint_file(const std::filesystem::path& path,
                             uint64_t max_hashed_bytes = std::numeric_limits<uint64_t>::max());

// A weights file up to this size is hashed whole.
inline constexpr uint64_t kWholeHashMaxBytes = uint64_t{64} << 20;
inline constexpr uint64_t kModelHeadBytes = uint64_t{16} << 20;
inline constexpr uint64_t kNumModelSamples = 1024;
inline constexpr uint64_t kModelSampleBytes = uint64_t{4} << 10;

// A model file: hashed whole up to kWholeHashMaxBytes, else over its head and samples
// ("bytes=N fnv1a64=X sampled=16MiB+1024x4KiB"). An HF directory: the same for each
// regular file in it, by name ("name: bytes=... fnv1a64=...; ..."). Throws Error, naming
// the path and the reason (e.g. "No such file or directory"), when it cannot be read.
std::string fingerprint_model(const std::filesystem::path& path);

}  // namespace pagedgen
