// Test-only GGUF writer: lays out small GGUF files byte by byte so tests can read them
// back, and records where each field sits so corruption tests can patch exactly one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf.h"

namespace pagedgen::test {

struct GgufTestTensor {
  std::string name;
  std::vector<uint64_t> dims;  // ggml order, innermost first
  uint32_t raw_type;
  std::vector<std::byte> data;
};

struct GgufBytes {
  std::vector<std::byte> bytes;
  // Byte position of each field, by label:
  //   "version", "tensor_count", "kv_count", "data" (start of the data section),
  //   "kv:<key>" (the key's length), "value:<key>" (the value; for an array its element
  //   type, the length follows 4 bytes later), "tensor:<name>" (the name's length),
  //   "type:<name>" and "offset:<name>" (those fields of its directory entry).
  std::map<std::string, std::size_t> field_at;

  std::size_t at(const std::string& label) const;
  void patch_u32(std::size_t position, uint32_t value);
  void patch_u64(std::size_t position, uint64_t value);
};

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3) : version_(version) {}

  void add(const std::string& key, GgufValue value) { metadata_.emplace_back(key, std::move(value)); }
  void add_tensor(GgufTestTensor tensor) { tensors_.push_back(std::move(tensor)); }
  // The alignment the data is laid out with. The reader learns it only from a
  // general.alignment key, so tests that change it add that key too.
  void set_alignment(uint64_t alignment) { alignment_ = alignment; }

  // Tensors are placed in order, each at the next aligned offset; the file ends right after
  // the last tensor's bytes (no trailing padding), so any truncation cuts real data.
  GgufBytes build() const;

 private:
  uint32_t version_;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<GgufTestTensor> tensors_;
};

GgufValue gguf_array(GgufValueType element_type, std::vector<GgufValue> items);

// A small valid model file: a few keys of several types (one array) and two tensors,
// "tok.weight" (Q8_0, dims {32, 2}) and "norm.weight" (F32, dims {8}).
GgufWriter small_gguf();

// Writes the file anew; throws when it cannot.
void write_file(const std::filesystem::path& path, std::span<const std::byte> bytes);
void write_file(const std::filesystem::path& path, std::string_view text);

// A fresh empty directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace pagedgen::test
