// GGUF v2/v3 parsing: the header, the metadata values (arrays nest up to kMaxArrayDepth),
// the tensor directory and its range checks, all read through gguf_cursor.h's bounded reads.
// Layout: magic "GGUF" | u32 version | u64 tensor_count | u64 kv_count | kv pairs |
//         tensor infos | padding to `general.alignment` | tensor data.
#include "model/gguf.h"

#include <fmt/ranges.h>

#include <bit>
#include <cstring>
#include <limits>

#include "model/gguf_cursor.h"
#include "util/error.h"

namespace pagedgen {
namespace {

using gguf::Cursor;
using gguf::Field;
using gguf::MemoryBudget;
using gguf::string_heap_bytes;

constexpr uint32_t kMaxArrayDepth = 4;  // an array of arrays of ... nests at most this deep
constexpr uint32_t kMaxDims = 4;        // GGML_MAX_DIMS
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kMaxValueType = static_cast<uint32_t>(GgufValueType::FLOAT64);

// A name or key read from the file, made safe for a one-line message: control and
// non-ASCII bytes are escaped and long names are cut.
std::string printable(std::string_view text) {
  constexpr std::size_t kMaxShown = 80;
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (text.size() > kMaxShown) out += fmt::format("...({} bytes)", text.size());
  return out;
}

// Bytes one element of `type` takes at least: what an array length is checked against.
uint64_t min_encoded_size(GgufValueType type) {
  switch (type) {
    case GgufValueType::UINT8:
    case GgufValueType::INT8:
    case GgufValueType::BOOL:
      return 1;
    case GgufValueType::UINT16:
    case GgufValueType::INT16:
      return 2;
    case GgufValueType::UINT32:
    case GgufValueType::INT32:
    case GgufValueType::FLOAT32:
      return 4;
    case GgufValueType::UINT64:
    case GgufValueType::INT64:
    case GgufValueType::FLOAT64:
      return 8;
    case GgufValueType::STRING:
      return 8;  // the length
    case GgufValueType::ARRAY:
      return 12;  // element type + length
  }
  return 1;
}

GgufValueType read_value_type(Cursor& cursor, const std::filesystem::path& path, const Field& field) {
  const uint64_t at = cursor.offset();
  const auto raw = cursor.read<uint32_t>(field);
  if (raw > kMaxValueType) {
    fail(
        "{}: unknown metadata value type {} for {} at byte {}; the file is corrupt or "
        "from a newer GGUF revision",
        path.string(), raw, describe(field), at);
  }
  return static_cast<GgufValueType>(raw);
}

GgufValue read_value(Cursor& cursor, const std::filesystem::path& path, GgufValueType type, std::string_view key,
                     uint32_t depth, MemoryBudget& budget);

// An array value (after its ARRAY type): element type, length, elements; `depth` arrays enclose it.
GgufArray read_array(Cursor& cursor, const std::filesystem::path& path, std::string_view key, uint32_t depth,
                     MemoryBudget& budget) {
  if (depth >= kMaxArrayDepth) {
    fail(
        "{}: key '{}' nests arrays deeper than {} levels at byte {}; pagedgen refuses "
        "such files",
        path.string(), key, kMaxArrayDepth, cursor.offset());
  }
  GgufArray array;
  array.element_type = read_value_type(cursor, path, {"the element type of array key", key});
  const uint64_t at = cursor.offset();
  const auto count = cursor.read<uint64_t>({"the length of array key", key});
  // Checked against the bytes left before anything is allocated.
  if (count > cursor.remaining() / min_encoded_size(array.element_type)) {
    fail(
        "{}: array key '{}' claims {} elements of type {} at byte {}, more than the {} "
        "bytes left in the file can hold; the file is truncated or corrupt",
        path.string(), key, count, gguf_value_type_name(array.element_type), at, cursor.remaining());
  }
  budget.charge(count, sizeof(GgufValue), {"the elements of array key", key}, at);
  array.items.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    array.items.push_back(read_value(cursor, path, array.element_type, key, depth + 1, budget));
  }
  return array;
}

GgufValue read_value(Cursor& cursor, const std::filesystem::path& path, GgufValueType type, std::string_view key,
                     uint32_t depth, MemoryBudget& budget) {
  const Field what{"the value of key", key};
  switch (type) {
    case GgufValueType::UINT8:
      return {type, uint64_t{cursor.read<uint8_t>(what)}};
    case GgufValueType::UINT16:
      return {type, uint64_t{cursor.read<uint16_t>(what)}};
    case GgufValueType::UINT32:
      return {type, uint64_t{cursor.read<uint32_t>(what)}};
    case GgufValueType::UINT64:
      return {type, cursor.read<uint64_t>(what)};
    case GgufValueType::INT8:
      return {type, int64_t{cursor.read<int8_t>(what)}};
    case GgufValueType::INT16:
      return {type, int64_t{cursor.read<int16_t>(what)}};
    case GgufValueType::INT32:
      return {type, int64_t{cursor.read<int32_t>(what)}};
    case GgufValueType::INT64:
      return {type, cursor.read<int64_t>(what)};
    case GgufValueType::FLOAT32:
      return {type, double{cursor.read<float>(what)}};
    case GgufValueType::FLOAT64:
      return {type, cursor.read<double>(what)};
    case GgufValueType::BOOL: {
      const uint64_t at = cursor.offset();
      const auto raw = cursor.read<uint8_t>(what);
      if (raw > 1) {
        fail("{}: bool value of key '{}' at byte {} is {}, not 0 or 1; the file is corrupt", path.string(), key, at,
             raw);
      }
      return {type, raw == 1};
    }
    case GgufValueType::STRING: {
      std::string text = cursor.read_string(what);
      budget.charge(1, string_heap_bytes(text.size()), what, cursor.offset() - text.size());
      return {type, std::move(text)};
    }
    case GgufValueType::ARRAY:
      return {type, read_array(cursor, path, key, depth, budget)};
  }
  check_failed("read_value", __FILE__, __LINE__,
               fmt::format("value type {} passed read_value_type", static_cast<uint32_t>(type)));
}

uint64_t checked_add(uint64_t a, uint64_t b, bool& overflow) {
  if (a > std::numeric_limits<uint64_t>::max() - b) overflow = true;
  return a + b;
}

// A metadata pair: its entry in metadata_ and its node in metadata_index_ (about 64 bytes
// beside the key); a tensor: its GgufTensorInfo, dims and index node likewise.
constexpr uint64_t kIndexNodeBytes = 64 + sizeof(std::string);

// The file starts with "GGUF"; anything else is refused with the bytes it starts with.
void check_magic(std::span<const std::byte> bytes, const std::filesystem::path& path) {
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0) return;
  std::string magic;
  for (std::size_t i = 0; i < std::min<std::size_t>(4, bytes.size()); ++i) {
    magic += fmt::format("{}{:02x}", i == 0 ? "" : " ", static_cast<unsigned>(bytes[i]));
  }
  fail(
      "{}: not a GGUF file (magic {}, expected 47 47 55 46 \"GGUF\"); pass a .gguf model "
      "file",
      path.string(), bytes.empty() ? "missing: the file is empty" : magic);
}

// Versions 2 and 3 are read; a 2 or 3 with its bytes swapped is a big-endian file.
void check_version(uint32_t version, const std::filesystem::path& path) {
  if (version == 2 || version == 3) return;
  const uint32_t swapped =
      (version >> 24) | ((version >> 8) & 0xff00u) | ((version << 8) & 0xff0000u) | (version << 24);
  if (swapped == 2 || swapped == 3) {
    fail("{}: big-endian GGUF (version {}) is not supported; use a little-endian file", path.string(), swapped);
  }
  fail("{}: unsupported GGUF version {} (pagedgen reads versions 2 and 3){}", path.string(), version,
       version == 1 ? "; convert the file with a current llama.cpp" : "");
}

// Each pair takes at least 13 bytes (key length, value type, a 1-byte value) and each
// tensor info at least 24: refuse absurd counts before reserving for them.
void check_counts(uint64_t kv_count, uint64_t tensor_count, uint64_t bytes_left, uint64_t file_bytes,
                  const std::filesystem::path& path) {
  if (kv_count > bytes_left / 13) {
    fail(
        "{}: header claims {} metadata keys, more than the {}-byte file can hold; the file "
        "is truncated or corrupt",
        path.string(), kv_count, file_bytes);
  }
  if (tensor_count > bytes_left / 24) {
    fail(
        "{}: header claims {} tensors, more than the {}-byte file can hold; the file is "
        "truncated or corrupt",
        path.string(), tensor_count, file_bytes);
  }
}

// One metadata pair: the key, its value type and the value.
std::pair<std::string, GgufValue> read_metadata_pair(Cursor& cursor, const std::filesystem::path& path,
                                                     MemoryBudget& budget) {
  const uint64_t key_at = cursor.offset();
  std::string key = cursor.read_string({"a metadata key"});
  budget.charge(2, string_heap_bytes(key.size()), {"a metadata key"}, key_at);  // in metadata_ and the index
  const std::string shown = printable(key);
  const GgufValueType type = read_value_type(cursor, path, {"the type of key", shown});
  GgufValue value = read_value(cursor, path, type, shown, 0, budget);
  return {std::move(key), std::move(value)};
}

// The dimensions of tensor `shown` (its info at byte `info_at`) into `info`, with their
// product, refused when there are too many or they multiply past 2^63 elements.
void read_tensor_dims(Cursor& cursor, const std::filesystem::path& path, const std::string& shown, uint64_t info_at,
                      MemoryBudget& budget, GgufTensorInfo& info) {
  const auto n_dims = cursor.read<uint32_t>({"the n_dims of tensor", shown});
  if (n_dims > kMaxDims) {
    fail("{}: tensor '{}' has {} dimensions (at most {} allowed); the file is corrupt", path.string(), shown, n_dims,
         kMaxDims);
  }
  budget.charge(n_dims, sizeof(uint64_t), {"the dimensions of tensor", shown}, info_at);
  info.dims.resize(n_dims);
  uint64_t num_elements = 1;
  bool overflow = false;
  for (uint32_t d = 0; d < n_dims; ++d) {
    info.dims[d] = cursor.read<uint64_t>({"a dimension of tensor", shown});
    if (info.dims[d] != 0 && num_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / info.dims[d]) {
      overflow = true;
    }
    num_elements *= info.dims[d];
  }
  if (overflow) {
    fail("{}: tensor '{}' dimensions {} multiply past 2^63 elements; the file is corrupt", path.string(), shown,
         fmt::join(info.dims, " x "));
  }
  info.num_elements = num_elements;
}

// The ggml type of tensor `shown` into `info`, and the bytes its elements take in it: the
// type must be known and its rows whole blocks.
void read_tensor_type(Cursor& cursor, const std::filesystem::path& path, const std::string& shown,
                      GgufTensorInfo& info) {
  info.raw_type = cursor.read<uint32_t>({"the type of tensor", shown});
  const std::optional<GgmlTypeLayout> layout = ggml_type_layout(info.raw_type);
  if (!layout) {
    fail(
        "{}: tensor '{}' has unknown ggml type number {}; the file is corrupt or needs a "
        "newer pagedgen",
        path.string(), shown, info.raw_type);
  }
  const uint64_t row_elements = info.dims.empty() ? 1 : info.dims[0];
  if (row_elements % layout->block_elements != 0) {
    fail(
        "{}: tensor '{}' rows of {} elements are not a multiple of the {} block size {}; "
        "the file is corrupt",
        path.string(), shown, row_elements, ggml_type_name(info.raw_type), layout->block_elements);
  }
  const uint64_t num_blocks = info.num_elements / layout->block_elements;
  if (num_blocks > std::numeric_limits<uint64_t>::max() / layout->block_bytes) {
    fail("{}: tensor '{}' has {} elements of {}, more bytes than 2^64; the file is corrupt", path.string(), shown,
         info.num_elements, ggml_type_name(info.raw_type));
  }
  info.num_bytes = num_blocks * layout->block_bytes;
}

// One tensor info: name, dimensions, type and data offset (a multiple of `alignment`).
GgufTensorInfo read_tensor_info(Cursor& cursor, const std::filesystem::path& path, uint64_t alignment,
                                MemoryBudget& budget) {
  GgufTensorInfo info;
  const uint64_t info_at = cursor.offset();
  info.name = cursor.read_string({"a tensor name"});
  budget.charge(2, string_heap_bytes(info.name.size()), {"a tensor name"}, info_at);
  const std::string shown = printable(info.name);
  read_tensor_dims(cursor, path, shown, info_at, budget, info);
  read_tensor_type(cursor, path, shown, info);
  const uint64_t offset_at = cursor.offset();
  info.offset = cursor.read<uint64_t>({"the data offset of tensor", shown});
  if (info.offset % alignment != 0) {
    fail(
        "{}: tensor '{}' data offset {} (field at byte {}) is not a multiple of the "
        "alignment {}; the file is corrupt",
        path.string(), shown, info.offset, offset_at, alignment);
  }
  return info;
}

// The data section starts at the first multiple of `alignment` after the tensor directory.
uint64_t data_section_offset(uint64_t directory_end, uint64_t alignment, const std::filesystem::path& path) {
  bool overflow = false;
  const uint64_t padded = checked_add(directory_end, alignment - 1, overflow);
  if (overflow) fail("{}: alignment {} is too large for the file", path.string(), alignment);
  return padded & ~(alignment - 1);
}

// Every tensor's bytes lie inside the file, so tensor_data() never reads past it.
void check_tensor_ranges(const std::vector<GgufTensorInfo>& tensors, uint64_t data_offset, uint64_t file_bytes,
                         const std::filesystem::path& path) {
  for (const GgufTensorInfo& info : tensors) {
    bool overflow = false;
    const uint64_t begin = checked_add(data_offset, info.offset, overflow);
    const uint64_t end = checked_add(begin, info.num_bytes, overflow);
    if (overflow || end > file_bytes) {
      fail(
          "{}: tensor '{}' data (offset {} + {} bytes from the data section at byte {}) runs "
          "past the end of the {}-byte file; the file is truncated or corrupt",
          path.string(), printable(info.name), info.offset, info.num_bytes, data_offset, file_bytes);
    }
  }
}

}  // namespace

GgufFile::GgufFile(const std::filesystem::path& path) : file_(path) {
  const std::span<const std::byte> bytes = file_.bytes();
  check_magic(bytes, path);
  Cursor cursor(bytes, path);
  cursor.read<uint32_t>({"the magic"});
  version_ = cursor.read<uint32_t>({"the GGUF version"});
  check_version(version_, path);
  const auto tensor_count = cursor.read<uint64_t>({"the tensor count"});
  const auto kv_count = cursor.read<uint64_t>({"the metadata key count"});
  check_counts(kv_count, tensor_count, cursor.remaining(), bytes.size(), path);
  MemoryBudget budget(bytes.size(), path);
  read_metadata(cursor, budget, kv_count);
  // Throws for a negative or non-integer value; zero and non-powers of two are refused here.
  alignment_ = get_uint("general.alignment").value_or(kDefaultAlignment);
  if (!std::has_single_bit(alignment_)) {
    fail("{}: general.alignment must be a nonzero power of two, got {}", path.string(), alignment_);
  }
  read_tensor_directory(cursor, budget, tensor_count);
  data_offset_ = data_section_offset(cursor.offset(), alignment_, path);
  check_tensor_ranges(tensors_, data_offset_, bytes.size(), path);
}

void GgufFile::read_metadata(gguf::Cursor& cursor, gguf::MemoryBudget& budget, uint64_t kv_count) {
  budget.charge(kv_count, sizeof(metadata_[0]) + kIndexNodeBytes, {"the metadata key count"}, 16);
  metadata_.reserve(kv_count);
  for (uint64_t i = 0; i < kv_count; ++i) {
    const uint64_t key_at = cursor.offset();
    auto [key, value] = read_metadata_pair(cursor, path(), budget);
    if (!metadata_index_.emplace(key, metadata_.size()).second) {
      fail("{}: duplicate metadata key '{}' at byte {}; the file is corrupt", path().string(), printable(key), key_at);
    }
    metadata_.emplace_back(std::move(key), std::move(value));
  }
}

void GgufFile::read_tensor_directory(gguf::Cursor& cursor, gguf::MemoryBudget& budget, uint64_t tensor_count) {
  budget.charge(tensor_count, sizeof(GgufTensorInfo) + kIndexNodeBytes, {"the tensor count"}, 8);
  tensors_.reserve(tensor_count);
  for (uint64_t i = 0; i < tensor_count; ++i) {
    const uint64_t info_at = cursor.offset();
    GgufTensorInfo info = read_tensor_info(cursor, path(), alignment_, budget);
    if (!tensor_index_.emplace(info.name, tensors_.size()).second) {
      fail("{}: duplicate tensor name '{}' at byte {}; the file is corrupt", path().string(), printable(info.name),
           info_at);
    }
    tensors_.push_back(std::move(info));
  }
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const std::byte> GgufFile::tensor_data(const GgufTensorInfo& tensor) const {
  const std::span<const std::byte> bytes = file_.bytes();
  PG_CHECK(data_offset_ <= bytes.size() && tensor.offset <= bytes.size() - data_offset_ &&
               tensor.num_bytes <= bytes.size() - data_offset_ - tensor.offset,
           "tensor '{}' range was checked at open", tensor.name);
  return bytes.subspan(data_offset_ + tensor.offset, tensor.num_bytes);
}

}  // namespace pagedgen
