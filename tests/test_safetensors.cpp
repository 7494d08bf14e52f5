// safetensors reader: single files, model directories, sharded models with an index, and
// corrupt headers, each of which must throw Error naming the file and the tensor.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstring>
#include <fstream>

#include "gguf_writer.h"
#include "model/safetensors.h"
#include "util/error.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

// One file: 8-byte little-endian header length, the JSON header, then `data`.
std::vector<std::byte> safetensors_bytes(const std::string& header, const std::vector<std::byte>& data) {
  std::vector<std::byte> out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((header.size() >> (8 * i)) & 0xff));
  for (const char c : header) out.push_back(static_cast<std::byte>(c));
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<std::byte> counting_bytes(std::size_t n, int start) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>((start + i) & 0xff);
  return out;
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string safetensors_open_error(const std::filesystem::path& path) {
  try {
    SafetensorsModel model(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_safetensors_error(const std::filesystem::path& path, std::initializer_list<std::string_view> words) {
  CHECK_THROWS_AS(SafetensorsModel{path}, Error);
  const std::string message = safetensors_open_error(path);
  CHECK_MESSAGE(message.find('\n') == std::string::npos, message);
  for (const std::string_view word : words) {
    CHECK_MESSAGE(message.find(word) != std::string::npos, "expected '", word, "' in: ", message);
  }
}

// A header for tensors laid out back to back: {name, dtype, shape, num_bytes}.
struct Entry {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  uint64_t num_bytes;
};

std::string header_for(const std::vector<Entry>& entries, bool with_metadata) {
  std::string json = "{";
  if (with_metadata) json += R"("__metadata__": {"format": "pt"}, )";
  uint64_t offset = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    json += fmt::format(R"({}"{}": {{"dtype": "{}", "shape": [{}], "data_offsets": [{}, {}]}})", i == 0 ? "" : ", ",
                        e.name, e.dtype, fmt::join(e.shape, ", "), offset, offset + e.num_bytes);
    offset += e.num_bytes;
  }
  return json + "}";
}

}  // namespace

TEST_CASE("a single file reads back names, dtypes, shapes and data") {
  TempDir dir("pagedgen-st");
  const std::vector<Entry> entries = {
      {"w.f32", "F32", {2, 3}, 24}, {"w.bf16", "BF16", {4}, 8},   {"w.i8", "I8", {2, 2}, 4}, {"scalar", "F16", {}, 2},
      {"empty", "F32", {0, 5}, 0},  {"exotic", "F8_E8M0", {3}, 3}};  // unknown dtype: not size-checked
  // Trailing spaces pad the header, as writers do to align the data.
  const std::string header = header_for(entries, true) + "      ";
  const auto data = counting_bytes(41, 0);
  write_file(dir / "one.safetensors", safetensors_bytes(header, data));
  const SafetensorsModel model(dir / "one.safetensors");
  REQUIRE(model.tensors().size() == 6);
  CHECK(model.tensors()[0].name == "w.f32");
  CHECK(model.tensors()[0].dtype == "F32");
  CHECK((model.tensors()[0].shape == std::vector<uint64_t>{2, 3}));
  CHECK(model.tensors()[0].data.size() == 24);
  CHECK(model.tensors()[0].data[0] == std::byte{0});
  const SafetensorsTensor* bf16 = model.find("w.bf16");
  REQUIRE(bf16 != nullptr);
  CHECK(bf16->dtype == "BF16");
  CHECK(bf16->data.size() == 8);
  CHECK(bf16->data[0] == std::byte{24});
  CHECK(model.find("w.i8")->data[3] == std::byte{35});
  CHECK(model.find("scalar")->shape.empty());
  CHECK(model.find("empty")->data.empty());
  CHECK(model.find("exotic")->data[2] == std::byte{40});
  CHECK(model.find("__metadata__") == nullptr);
  CHECK(model.find("missing") == nullptr);
}

TEST_CASE("a directory with model.safetensors") {
  TempDir dir("pagedgen-st");
  write_file(dir / "model.safetensors",
             safetensors_bytes(header_for({{"a", "F32", {2}, 8}}, false), counting_bytes(8, 7)));
  const SafetensorsModel model(dir.path());
  REQUIRE(model.tensors().size() == 1);
  CHECK(model.find("a")->data[0] == std::byte{7});
}

TEST_CASE("a sharded model with model.safetensors.index.json") {
  TempDir dir("pagedgen-st");
  write_file(dir / "model-00001-of-00002.safetensors",
             safetensors_bytes(header_for({{"a", "F32", {2}, 8}, {"b", "F16", {3}, 6}}, true), counting_bytes(14, 0)));
  write_file(dir / "model-00002-of-00002.safetensors",
             safetensors_bytes(header_for({{"c", "BF16", {1, 2}, 4}, {"not.indexed", "I8", {1}, 1}}, false),
                               counting_bytes(5, 100)));
  write_text(dir / "model.safetensors.index.json", R"({
    "metadata": {"total_size": 18},
    "weight_map": {"a": "model-00001-of-00002.safetensors",
                   "c": "model-00002-of-00002.safetensors",
                   "b": "model-00001-of-00002.safetensors"}})");
  const SafetensorsModel model(dir.path());
  REQUIRE(model.tensors().size() == 3);
  CHECK(model.tensors()[0].name == "a");
  CHECK(model.tensors()[1].name == "c");
  CHECK(model.tensors()[2].name == "b");
  CHECK(model.find("b")->data[0] == std::byte{8});
  CHECK(model.find("c")->data.size() == 4);
  CHECK(model.find("c")->data[1] == std::byte{101});
  CHECK((model.find("c")->shape == std::vector<uint64_t>{1, 2}));
  CHECK(model.find("not.indexed") == nullptr);
}

TEST_CASE("corrupt single files") {
  TempDir dir("pagedgen-st");
  const auto path = dir / "bad.safetensors";
  const std::string good_header = header_for({{"w", "F32", {2, 2}, 16}}, false);

  SUBCASE("header length past the end") {
    auto bytes = safetensors_bytes(good_header, counting_bytes(16, 0));
    bytes[5] = std::byte{1};  // 2^40 + the real length
    write_file(path, bytes);
    expect_safetensors_error(path, {"bad.safetensors", "header length", "past the end"});
  }
  SUBCASE("shorter than the length field") {
    write_file(path, counting_bytes(5, 0));
    expect_safetensors_error(path, {"bad.safetensors", "not a safetensors file"});
  }
  SUBCASE("bad JSON") {
    write_file(path, safetensors_bytes(R"({"w": {"dtype": "F32", )", counting_bytes(16, 0)));
    expect_safetensors_error(path, {"bad.safetensors", "not valid JSON"});
    write_file(path, safetensors_bytes("[1, 2]", {}));
    expect_safetensors_error(path, {"bad.safetensors", "not a JSON object"});
  }
  SUBCASE("data_offsets past the end") {
    write_file(path, safetensors_bytes(good_header, counting_bytes(15, 0)));
    expect_safetensors_error(path, {"bad.safetensors", "'w'", "data_offsets [0, 16)", "15-byte data section"});
  }
  SUBCASE("begin after end") {
    write_file(path, safetensors_bytes(R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}})",
                                       counting_bytes(16, 0)));
    expect_safetensors_error(path, {"'w'", "data_offsets [8, 4)"});
  }
  SUBCASE("size does not match the shape") {
    write_file(path, safetensors_bytes(header_for({{"w", "F32", {2, 3}, 16}}, false), counting_bytes(16, 0)));
    expect_safetensors_error(path, {"bad.safetensors", "'w'", "shape [2, 3] needs 24 bytes", "hold 16"});
    write_file(path, safetensors_bytes(header_for({{"huge", "F32", {1ull << 40, 1ull << 40}, 16}}, false),
                                       counting_bytes(16, 0)));
    expect_safetensors_error(path, {"'huge'", "more than 2^64"});
  }
  SUBCASE("malformed entries") {
    write_file(path, safetensors_bytes(R"({"w": {"shape": [4], "data_offsets": [0, 16]}})", counting_bytes(16, 0)));
    expect_safetensors_error(path, {"'w'", "dtype"});
    write_file(path, safetensors_bytes(R"({"w": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}})",
                                       counting_bytes(16, 0)));
    expect_safetensors_error(path, {"'w'", "shape"});
    write_file(path, safetensors_bytes(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0]}})",
                                       counting_bytes(16, 0)));
    expect_safetensors_error(path, {"'w'", "data_offsets"});
    write_file(path, safetensors_bytes(R"({"w": 3})", {}));
    expect_safetensors_error(path, {"'w'", "not a JSON object"});
  }
  SUBCASE("duplicate tensor names") {
    write_file(
        path,
        safetensors_bytes(
            R"({"w": {"dtype": "I8", "shape": [1], "data_offsets": [0, 1]}, "w": {"dtype": "I8", "shape": [1], "data_offsets": [1, 2]}})",
            counting_bytes(2, 0)));
    expect_safetensors_error(path, {"'w'", "twice"});
  }
}

TEST_CASE("broken model directories") {
  TempDir dir("pagedgen-st");
  const std::string shard = "model-00001-of-00002.safetensors";
  write_file(dir / shard, safetensors_bytes(header_for({{"a", "F32", {2}, 8}}, false), counting_bytes(8, 0)));

  SUBCASE("no model files") {
    TempDir empty("pagedgen-st-empty");
    expect_safetensors_error(empty.path(), {"no model.safetensors or model.safetensors.index.json"});
  }
  SUBCASE("missing shard") {
    write_text(dir / "model.safetensors.index.json",
               R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})");
    expect_safetensors_error(dir.path(),
                 {"model.safetensors.index.json", "shard 'model-00002-of-00002.safetensors'", "tensor 'b'", "missing"});
  }
  SUBCASE("tensor listed in the index but not in its shard") {
    write_text(dir / "model.safetensors.index.json",
               R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "z": "model-00001-of-00002.safetensors"}})");
    expect_safetensors_error(dir.path(), {"tensor 'z'", "not in its shard 'model-00001-of-00002.safetensors'"});
  }
  SUBCASE("shard names must stay in the directory") {
    write_text(dir / "model.safetensors.index.json", R"({"weight_map": {"a": "../elsewhere.safetensors"}})");
    expect_safetensors_error(dir.path(), {"tensor 'a'", "file name of a shard"});
  }
  SUBCASE("index without a weight_map, or not JSON") {
    write_text(dir / "model.safetensors.index.json", R"({"metadata": {}})");
    expect_safetensors_error(dir.path(), {"model.safetensors.index.json", "weight_map"});
    write_text(dir / "model.safetensors.index.json", R"({"weight_map": )");
    expect_safetensors_error(dir.path(), {"model.safetensors.index.json", "not valid JSON"});
  }
  SUBCASE("a corrupt shard names the shard") {
    write_file(dir / "model-00002-of-00002.safetensors", counting_bytes(3, 0));
    write_text(dir / "model.safetensors.index.json",
               R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})");
    expect_safetensors_error(dir.path(), {"model-00002-of-00002.safetensors", "not a safetensors file"});
  }
}
