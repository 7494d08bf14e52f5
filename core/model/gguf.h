// GGUF reader (versions 2 and 3): header, typed metadata, tensor directory, tensor data.
// The file is memory-mapped; every read is bounds-checked, so a truncated or malicious
// file throws Error with the path and what was wrong, never reads out of bounds, and the
// parsed metadata and tensor directory never take more than the file's size + 128 MiB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/ggml_type.h"
#include "util/mapped_file.h"

namespace pagedgen {

namespace gguf {
class Cursor;
class MemoryBudget;
}  // namespace gguf

enum class GgufValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};

std::string_view gguf_value_type_name(GgufValueType type);

struct GgufValue;
struct GgufArray {
  GgufValueType element_type;
  std::vector<GgufValue> items;
};

// One metadata value. Integers keep their signedness in the variant; the type tag keeps
// the exact width.
struct GgufValue {
  GgufValueType type;
  std::variant<uint64_t, int64_t, double, bool, std::string, GgufArray> value;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the innermost (contiguous) one
  uint32_t raw_type;           // a GgmlType number (may be one we cannot dequantize)
  uint64_t offset;             // from the start of the data section
  uint64_t num_elements;
  uint64_t num_bytes;
};

class GgufFile {
 public:
  // Maps and parses the header, metadata and tensor directory. Throws Error.
  explicit GgufFile(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return file_.path(); }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }

  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* find(std::string_view key) const;

  // Typed getters: nullopt when the key is absent; Error when present with a type that
  // does not convert (integers convert between widths when the value fits).
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<uint64_t> get_uint(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::vector<std::string>> get_string_array(std::string_view key) const;
  std::optional<std::vector<float>> get_float_array(std::string_view key) const;
  std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // The tensor's bytes inside the mapping (range checked when the file was opened).
  std::span<const std::byte> tensor_data(const GgufTensorInfo& tensor) const;

 private:
  // The two sections after the header, in the file's order: the metadata pairs, then the
  // tensor infos (whose offsets follow general.alignment, read from the metadata).
  void read_metadata(gguf::Cursor& cursor, gguf::MemoryBudget& budget, uint64_t kv_count);
  void read_tensor_directory(gguf::Cursor& cursor, gguf::MemoryBudget& budget, uint64_t tensor_count);

  MappedFile file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  // name -> index into metadata_ / tensors_; also how duplicates are refused at open.
  std::map<std::string, std::size_t, std::less<>> metadata_index_;
  std::map<std::string, std::size_t, std::less<>> tensor_index_;
};

}  // namespace pagedgen
