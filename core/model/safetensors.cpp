// safetensors parsing: u64 little-endian header length | JSON header | data. The header maps
// tensor names to {dtype, shape, data_offsets [begin, end) relative to the data}; every
// range is checked against the data size, and against the shape for the dtypes we know.
#include "model/safetensors.h"

#include <fmt/ranges.h>
#include <simdjson.h>

#include <limits>
#include <map>
#include <optional>

#include "util/error.h"

namespace pagedgen {
namespace {

// The spec caps headers at 100 MB; anything longer is corrupt, not a model.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

std::optional<uint64_t> dtype_bytes(std::string_view dtype) {
  static constexpr std::pair<std::string_view, uint64_t> kSizes[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8},
  };
  for (const auto& [name, bytes] : kSizes) {
    if (name == dtype) return bytes;
  }
  return std::nullopt;
}

simdjson::dom::element parse_json(simdjson::dom::parser& parser, std::string_view text,
                                  const std::filesystem::path& path, std::string_view what) {
  simdjson::dom::element root;
  const simdjson::padded_string padded(text);
  if (const auto error = parser.parse(padded).get(root); error != simdjson::SUCCESS) {
    fail("{}: {} is not valid JSON: {}", path.string(), what, simdjson::error_message(error));
  }
  return root;
}

struct TensorEntry {
  std::string_view dtype;
  std::vector<uint64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

TensorEntry parse_entry(simdjson::dom::element value, const std::filesystem::path& path, std::string_view name) {
  const auto bad = [&](std::string_view problem) {
    fail("{}: header entry for tensor '{}' {}; the file is corrupt", path.string(), name, problem);
  };
  simdjson::dom::object entry;
  if (value.get_object().get(entry) != simdjson::SUCCESS) bad("is not a JSON object");
  TensorEntry out;
  if (entry["dtype"].get_string().get(out.dtype) != simdjson::SUCCESS) {
    bad("has no string \"dtype\"");
  }
  simdjson::dom::array shape;
  if (entry["shape"].get_array().get(shape) != simdjson::SUCCESS) bad("has no array \"shape\"");
  for (simdjson::dom::element dim : shape) {
    uint64_t size = 0;
    if (dim.get_uint64().get(size) != simdjson::SUCCESS) {
      bad("has a \"shape\" entry that is not a non-negative integer");
    }
    out.shape.push_back(size);
  }
  simdjson::dom::array offsets;
  if (entry["data_offsets"].get_array().get(offsets) != simdjson::SUCCESS || offsets.size() != 2 ||
      offsets.at(0).get_uint64().get(out.begin) != simdjson::SUCCESS ||
      offsets.at(1).get_uint64().get(out.end) != simdjson::SUCCESS) {
    bad("needs \"data_offsets\" as [begin, end] with non-negative integers");
  }
  return out;
}

// Parses `file`'s header and returns its tensors, every range checked.
std::vector<SafetensorsTensor> read_file_tensors(const MappedFile& file) {
  const std::span<const std::byte> bytes = file.bytes();
  const std::string where = file.path().string();
  if (bytes.size() < 8) {
    fail("{}: not a safetensors file ({} bytes, too short for the 8-byte header length)", where, bytes.size());
  }
  uint64_t header_bytes = 0;
  for (int i = 0; i < 8; ++i) header_bytes |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  if (header_bytes > bytes.size() - 8 || header_bytes > kMaxHeaderBytes) {
    fail(
        "{}: safetensors header length {} runs past the end of the {}-byte file; the file is "
        "truncated or not safetensors",
        where, header_bytes, bytes.size());
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes.data() + 8), header_bytes);
  const std::span<const std::byte> data = bytes.subspan(8 + header_bytes);

  simdjson::dom::parser parser;
  const simdjson::dom::element root = parse_json(parser, header, file.path(), "the safetensors header");
  simdjson::dom::object tensors_json;
  if (root.get_object().get(tensors_json) != simdjson::SUCCESS) {
    fail("{}: the safetensors header is not a JSON object", where);
  }
  std::vector<SafetensorsTensor> tensors;
  std::map<std::string, bool, std::less<>> seen;
  for (const auto field : tensors_json) {
    const std::string_view name = field.key;
    if (name == "__metadata__") continue;
    if (!seen.emplace(std::string(name), true).second) {
      fail("{}: tensor '{}' appears twice in the header; the file is corrupt", where, name);
    }
    const TensorEntry entry = parse_entry(field.value, file.path(), name);
    if (entry.begin > entry.end || entry.end > data.size()) {
      fail(
          "{}: tensor '{}' data_offsets [{}, {}) fall outside the {}-byte data section; the "
          "file is truncated or corrupt",
          where, name, entry.begin, entry.end, data.size());
    }
    if (const std::optional<uint64_t> element_bytes = dtype_bytes(entry.dtype)) {
      uint64_t expected = *element_bytes;
      bool overflow = false;
      for (const uint64_t dim : entry.shape) {
        if (dim != 0 && expected > std::numeric_limits<uint64_t>::max() / dim) overflow = true;
        expected *= dim;
      }
      if (overflow || expected != entry.end - entry.begin) {
        fail(
            "{}: tensor '{}' of dtype {} and shape [{}] needs {} bytes but its data_offsets "
            "[{}, {}) hold {}; the file is corrupt",
            where, name, entry.dtype, fmt::join(entry.shape, ", "),
            overflow ? std::string("more than 2^64") : std::to_string(expected), entry.begin, entry.end,
            entry.end - entry.begin);
      }
    }
    tensors.push_back(
        {std::string(name), std::string(entry.dtype), entry.shape, data.subspan(entry.begin, entry.end - entry.begin)});
  }
  return tensors;
}

// A shard name from the index must name a file beside it, never a path elsewhere.
bool is_plain_file_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

// The shard file a weight_map entry names for tensor `name`: a file beside the index.
std::string_view shard_file_name(simdjson::dom::element value, const std::filesystem::path& index_path,
                                 std::string_view name) {
  std::string_view shard_name;
  if (value.get_string().get(shard_name) != simdjson::SUCCESS || !is_plain_file_name(shard_name)) {
    fail(
        "{}: weight_map entry for tensor '{}' must be the file name of a shard in the same "
        "directory",
        index_path.string(), name);
  }
  return shard_name;
}

// A shard's tensors, found by the names the index lists them under.
using TensorsByName = std::map<std::string, SafetensorsTensor, std::less<>>;

TensorsByName by_name(std::vector<SafetensorsTensor> tensors) {
  TensorsByName found;
  for (SafetensorsTensor& tensor : tensors) found.emplace(tensor.name, std::move(tensor));
  return found;
}

}  // namespace

SafetensorsModel::SafetensorsModel(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    files_.push_back(std::make_unique<MappedFile>(path));
    tensors_ = read_file_tensors(*files_.back());
  } else if (std::filesystem::exists(path / "model.safetensors", ec)) {
    files_.push_back(std::make_unique<MappedFile>(path / "model.safetensors"));
    tensors_ = read_file_tensors(*files_.back());
  } else if (const std::filesystem::path index_path = path / "model.safetensors.index.json";
             std::filesystem::exists(index_path, ec)) {
    read_sharded(path, index_path);
  } else {
    fail("{}: no model.safetensors or model.safetensors.index.json in this directory", path.string());
  }
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    if (!index_.emplace(tensors_[i].name, i).second) {
      fail("{}: tensor '{}' is listed twice", path.string(), tensors_[i].name);
    }
  }
}

void SafetensorsModel::read_sharded(const std::filesystem::path& dir, const std::filesystem::path& index_path) {
  const MappedFile index_file(index_path);
  const std::string_view text(reinterpret_cast<const char*>(index_file.bytes().data()), index_file.bytes().size());
  simdjson::dom::parser parser;
  const simdjson::dom::element root = parse_json(parser, text, index_path, "the index");
  simdjson::dom::object weight_map;
  if (root["weight_map"].get_object().get(weight_map) != simdjson::SUCCESS) {
    fail("{}: no \"weight_map\" object mapping tensor names to shard files", index_path.string());
  }
  // Each shard is mapped and parsed once, however many tensors name it.
  std::map<std::string, TensorsByName, std::less<>> shards;
  for (const auto field : weight_map) {
    const std::string_view name = field.key;
    const std::string_view shard_name = shard_file_name(field.value, index_path, name);
    auto shard = shards.find(shard_name);
    if (shard == shards.end()) {
      const std::filesystem::path shard_path = dir / shard_name;
      std::error_code ec;
      if (!std::filesystem::exists(shard_path, ec)) {
        fail("{}: shard '{}' (holding tensor '{}') is missing from {}; download every shard", index_path.string(),
             shard_name, name, dir.string());
      }
      files_.push_back(std::make_unique<MappedFile>(shard_path));
      shard = shards.emplace(std::string(shard_name), by_name(read_file_tensors(*files_.back()))).first;
    }
    const auto tensor = shard->second.find(name);
    if (tensor == shard->second.end()) {
      fail("{}: tensor '{}' is listed in the index but is not in its shard '{}'", index_path.string(), name,
           shard_name);
    }
    tensors_.push_back(tensor->second);
  }
  if (tensors_.empty()) fail("{}: the weight_map lists no tensors", index_path.string());
}

const SafetensorsTensor* SafetensorsModel::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace pagedgen
