// The bounded reads GGUF parsing (model/gguf.cpp) is made of: a little-endian Cursor over
// the mapping whose every read checks the bytes left first, the Field that names what is
// read in their messages, and the MemoryBudget that bounds what the parsed metadata and
// tensor directory take in memory by the file's size.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "util/error.h"

namespace pagedgen::gguf {

// Names a field for error messages without formatting anything until a read fails:
// {"the value of key", "general.name"} reads "the value of key 'general.name'".
struct Field {
  const char* what;
  std::string_view name = {};
};

inline std::string describe(const Field& field) {
  if (field.name.data() == nullptr) return field.what;
  return fmt::format("{} '{}'", field.what, field.name);
}

// Parsed metadata and the tensor directory take more memory than their bytes in the file (a
// uint8 array element: 1 byte there, one GgufValue here). They may take the file's size plus
// this much, so that a crafted file cannot make the reader allocate many times its size;
// real files, whose metadata is a few MB beside GBs of weights, never come close.
constexpr uint64_t kMetadataMemorySlackBytes = uint64_t{128} << 20;

// Bytes a string of `length` takes beyond its std::string (libstdc++ keeps 15 inline).
inline uint64_t string_heap_bytes(uint64_t length) { return length > 15 ? length + 1 : 0; }

// Counts what the parsed metadata and tensor directory hold in memory, and refuses the file
// before an allocation would take the total past `limit`.
class MemoryBudget {
 public:
  MemoryBudget(uint64_t file_bytes, const std::filesystem::path& path)
      : limit_(file_bytes + kMetadataMemorySlackBytes), path_(path) {}

  // `count` objects of `bytes_each` bytes, for `field` at byte `at` of the file.
  void charge(uint64_t count, uint64_t bytes_each, const Field& field, uint64_t at) {
    const uint64_t left = limit_ - used_;
    if (bytes_each != 0 && count > left / bytes_each) {
      fail(
          "{}: {} at byte {} would take the parsed metadata past {} bytes of memory (the file's size "
          "plus {} MiB); the file is corrupt or crafted",
          path_.string(), describe(field), at, limit_, kMetadataMemorySlackBytes >> 20);
    }
    used_ += count * bytes_each;
  }

 private:
  uint64_t limit_;
  uint64_t used_ = 0;
  const std::filesystem::path& path_;
};

// Reads little-endian fields from the mapping; every read checks the bytes left first.
class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, const std::filesystem::path& path) : bytes_(bytes), path_(path) {}

  uint64_t offset() const { return offset_; }
  uint64_t remaining() const { return bytes_.size() - offset_; }

  template <typename T>
  T read(const Field& field) {
    need(sizeof(T), field);
    uint64_t value = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      value |= static_cast<uint64_t>(bytes_[offset_ + i]) << (8 * i);
    }
    offset_ += sizeof(T);
    if constexpr (std::is_same_v<T, float>) {
      return std::bit_cast<float>(static_cast<uint32_t>(value));
    } else if constexpr (std::is_same_v<T, double>) {
      return std::bit_cast<double>(value);
    } else {
      return static_cast<T>(value);
    }
  }

  std::string read_string(const Field& field) {
    const auto length = read<uint64_t>(field);
    if (length > remaining()) {
      fail(
          "{}: string length {} of {} at byte {} exceeds the {} bytes left in the file; the "
          "file is truncated or corrupt",
          path_.string(), length, describe(field), offset_ - 8, remaining());
    }
    std::string text(reinterpret_cast<const char*>(bytes_.data() + offset_), length);
    offset_ += length;
    return text;
  }

 private:
  void need(uint64_t num_bytes, const Field& field) const {
    if (num_bytes > remaining()) {
      fail(
          "{}: truncated at byte {} reading {} ({} bytes needed, {} left); the file is "
          "incomplete, fetch it again",
          path_.string(), offset_, describe(field), num_bytes, remaining());
    }
  }

  std::span<const std::byte> bytes_;
  const std::filesystem::path& path_;
  uint64_t offset_ = 0;
};

}  // namespace pagedgen::gguf
