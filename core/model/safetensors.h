// safetensors reader: one file, or shards listed by model.safetensors.index.json.
// Files are memory-mapped; the JSON header and every tensor range are checked against
// the file size, so a truncated or malicious file throws Error, never reads out of bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/mapped_file.h"

namespace pagedgen {

struct SafetensorsTensor {
  std::string name;
  std::string dtype;            // as written in the header: "F32", "F16", "BF16", "I8", ...
  std::vector<uint64_t> shape;  // row-major, outermost first
  std::span<const std::byte> data;
};

class SafetensorsModel {
 public:
  // `path` is a .safetensors file, or a directory holding model.safetensors or
  // model.safetensors.index.json with its shards. Throws Error.
  explicit SafetensorsModel(const std::filesystem::path& path);

  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(std::string_view name) const;

 private:
  // The tensors model.safetensors.index.json (at `index_path` in `dir`) lists, in its order,
  // each found in the shard the index names for it.
  void read_sharded(const std::filesystem::path& dir, const std::filesystem::path& index_path);

  std::vector<std::unique_ptr<MappedFile>> files_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, std::size_t, std::less<>> index_;  // name -> index into tensors_
};

}  // namespace pagedgen
