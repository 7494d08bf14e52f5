// Test-only GGUF writer (see gguf_writer.h). Written from the GGUF spec, independently of
// the reader in core/model/gguf.cpp, so a shared misreading of the format would show up
// as a mismatch against the real model file in test_gguf.
#include "gguf_writer.h"

#include <bit>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace pagedgen::test {
namespace {

class ByteSink {
 public:
  std::vector<std::byte>& bytes() { return bytes_; }
  std::size_t size() const { return bytes_.size(); }

  void put(uint64_t value, int width) {
    for (int i = 0; i < width; ++i) bytes_.push_back(static_cast<std::byte>((value >> (8 * i)) & 0xff));
  }
  void put_string(const std::string& text) {
    put(text.size(), 8);
    for (const char c : text) bytes_.push_back(static_cast<std::byte>(c));
  }
  void pad_to(uint64_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(std::byte{0});
  }

  void put_value(const GgufValue& value) {
    switch (value.type) {
      case GgufValueType::UINT8:
        put(std::get<uint64_t>(value.value), 1);
        break;
      case GgufValueType::UINT16:
        put(std::get<uint64_t>(value.value), 2);
        break;
      case GgufValueType::UINT32:
        put(std::get<uint64_t>(value.value), 4);
        break;
      case GgufValueType::UINT64:
        put(std::get<uint64_t>(value.value), 8);
        break;
      case GgufValueType::INT8:
        put(static_cast<uint64_t>(std::get<int64_t>(value.value)), 1);
        break;
      case GgufValueType::INT16:
        put(static_cast<uint64_t>(std::get<int64_t>(value.value)), 2);
        break;
      case GgufValueType::INT32:
        put(static_cast<uint64_t>(std::get<int64_t>(value.value)), 4);
        break;
      case GgufValueType::INT64:
        put(static_cast<uint64_t>(std::get<int64_t>(value.value)), 8);
        break;
      case GgufValueType::FLOAT32:
        put(std::bit_cast<uint32_t>(static_cast<float>(std::get<double>(value.value))), 4);
        break;
      case GgufValueType::FLOAT64:
        put(std::bit_cast<uint64_t>(std::get<double>(value.value)), 8);
        break;
      case GgufValueType::BOOL:
        put(std::get<bool>(value.value) ? 1 : 0, 1);
        break;
      case GgufValueType::STRING:
        put_string(std::get<std::string>(value.value));
        break;
      case GgufValueType::ARRAY: {
        const auto& array = std::get<GgufArray>(value.value);
        put(static_cast<uint32_t>(array.element_type), 4);
        put(array.items.size(), 8);
        for (const GgufValue& item : array.items) {
          if (item.type != array.element_type) throw std::logic_error("array item of the wrong type");
          put_value(item);
        }
        break;
      }
    }
  }

 private:
  std::vector<std::byte> bytes_;
};

std::vector<std::byte> to_bytes(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (const int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

}  // namespace

std::size_t GgufBytes::at(const std::string& label) const {
  const auto it = field_at.find(label);
  if (it == field_at.end()) throw std::logic_error("no field labelled " + label);
  return it->second;
}

void GgufBytes::patch_u32(std::size_t position, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes.at(position + i) = static_cast<std::byte>((value >> (8 * i)) & 0xff);
}

void GgufBytes::patch_u64(std::size_t position, uint64_t value) {
  for (int i = 0; i < 8; ++i) bytes.at(position + i) = static_cast<std::byte>((value >> (8 * i)) & 0xff);
}

GgufBytes GgufWriter::build() const {
  ByteSink sink;
  GgufBytes out;
  sink.put(0x46554747, 4);  // "GGUF"
  out.field_at["version"] = sink.size();
  sink.put(version_, 4);
  out.field_at["tensor_count"] = sink.size();
  sink.put(tensors_.size(), 8);
  out.field_at["kv_count"] = sink.size();
  sink.put(metadata_.size(), 8);
  for (const auto& [key, value] : metadata_) {
    out.field_at["kv:" + key] = sink.size();
    sink.put_string(key);
    sink.put(static_cast<uint32_t>(value.type), 4);
    out.field_at["value:" + key] = sink.size();
    sink.put_value(value);
  }
  uint64_t next_offset = 0;
  std::vector<uint64_t> offsets;
  for (const GgufTestTensor& tensor : tensors_) {
    out.field_at["tensor:" + tensor.name] = sink.size();
    sink.put_string(tensor.name);
    sink.put(tensor.dims.size(), 4);
    for (const uint64_t dim : tensor.dims) sink.put(dim, 8);
    out.field_at["type:" + tensor.name] = sink.size();
    sink.put(tensor.raw_type, 4);
    out.field_at["offset:" + tensor.name] = sink.size();
    sink.put(next_offset, 8);
    offsets.push_back(next_offset);
    next_offset += tensor.data.size();
    next_offset = (next_offset + alignment_ - 1) / alignment_ * alignment_;
  }
  sink.pad_to(alignment_);
  out.field_at["data"] = sink.size();
  const std::size_t data_start = sink.size();
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    sink.bytes().resize(data_start + offsets[i]);
    sink.bytes().insert(sink.bytes().end(), tensors_[i].data.begin(), tensors_[i].data.end());
  }
  out.bytes = std::move(sink.bytes());
  return out;
}

GgufValue gguf_array(GgufValueType element_type, std::vector<GgufValue> items) {
  return {GgufValueType::ARRAY, GgufArray{element_type, std::move(items)}};
}

GgufWriter small_gguf() {
  GgufWriter writer;
  writer.add("general.architecture", {GgufValueType::STRING, std::string("llama")});
  writer.add("test.count", {GgufValueType::UINT32, uint64_t{7}});
  writer.add("test.words", gguf_array(GgufValueType::STRING, {{GgufValueType::STRING, std::string("a")},
                                                              {GgufValueType::STRING, std::string("bc")}}));
  // Q8_0: two blocks, d = 1.0 (f16 0x3c00) and d = 0.5 (0x3800), quants 0..31 and -1.
  std::vector<std::byte> q8 = to_bytes({0x00, 0x3c});
  for (int i = 0; i < 32; ++i) q8.push_back(static_cast<std::byte>(i));
  for (const std::byte b : to_bytes({0x00, 0x38})) q8.push_back(b);
  for (int i = 0; i < 32; ++i) q8.push_back(std::byte{0xff});
  writer.add_tensor({"tok.weight", {32, 2}, static_cast<uint32_t>(GgmlType::Q8_0), q8});
  std::vector<std::byte> f32;
  for (int i = 0; i < 8; ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(i) * 0.25f);
    for (int k = 0; k < 4; ++k) f32.push_back(static_cast<std::byte>((bits >> (8 * k)) & 0xff));
  }
  writer.add_tensor({"norm.weight", {8}, static_cast<uint32_t>(GgmlType::F32), f32});
  return writer;
}

void write_file(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

void write_file(const std::filesystem::path& path, std::string_view text) {
  write_file(path, std::as_bytes(std::span<const char>(text.data(), text.size())));
}

TempDir::TempDir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + ".XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace pagedgen::test
