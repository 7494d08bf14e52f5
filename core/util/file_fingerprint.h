// Fingerprints that tell whether a file is the one an interrupted run used (--resume): its
// size plus a 64-bit hash of all its bytes, written as text. An input, and a model file up
// to 64 MiB (config and tokenizer files, small models): FNV-1a (util/fnv_hash.h),
// "bytes=1234 fnv1a64=0123456789abcdef". A larger model file, which may hold tens of GB: a
// hash of 64-bit words in four lanes (several GB/s, so that a whole file costs about what
// reading it does), "bytes=1234 words64=0123456789abcdef". Either changes when any byte
// anywhere in the file does (each step is a bijection of the hash state).
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>

#include "util/stop_token.h"

namespace pagedgen {

// One pass over a whole file: its size, its hash and its lines (as io/line_reader.h
// counts them: a last line without a newline counts, an empty piece after it does not).
struct FileScan {
  uint64_t num_bytes = 0;
  uint64_t hash = 0;  // FNV-1a of every byte, finalized (splitmix64)
  uint64_t num_lines = 0;

  std::string fingerprint() const;  // "bytes=N fnv1a64=X"
};
// "bytes=N fnv1a64=X": the text of an FNV-1a fingerprint, a file's or a stream's
// (util/hashing_streambuf.h), so that the two compare.
std::string format_fingerprint(uint64_t num_bytes, uint64_t hash);

// Throws Error naming the file and the reason when it cannot be read; Stopped (read once
// per MiB) when `stop` asks.
FileScan scan_file(const std::filesystem::path& path, const StopToken& stop = {});

// Size and hash of the first `max_hashed_bytes` bytes (all of them by default). Throws
// Error, naming the file and the reason, when it cannot be read.
std::string fingerprint_file(const std::filesystem::path& path,
                             uint64_t max_hashed_bytes = std::numeric_limits<uint64_t>::max());

// Model files up to this size are hashed with FNV-1a, larger ones with words64.
inline constexpr uint64_t kFnvModelMaxBytes = uint64_t{64} << 20;

// A model file: its size and FNV-1a or words64 hash ("bytes=N words64=X"). An HF directory: the
// same for each regular file in it, by name ("name: bytes=... words64=...; ..."). Throws
// Error, naming the path and the reason (e.g. "No such file or directory"), when it
// cannot be read; Stopped (read once per MiB) when `stop` asks.
std::string fingerprint_model(const std::filesystem::path& path, const StopToken& stop = {});

}  // namespace pagedgen
