// GGUF reader: round trips of files made by the test writer (v2/v3, every value type,
// nested arrays, custom alignment), the default model's directory, and corrupt files,
// each of which must throw Error naming the file and the problem.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "gguf_writer.h"
#include "model/gguf.h"
#include "test_paths.h"
#include "util/error.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

// The Error message GgufFile throws for `path` ("" when it opens).
std::string gguf_open_error(const std::filesystem::path& path) {
  try {
    GgufFile file(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Writes `bytes`, expects opening to throw Error whose one-line message names the file
// and contains every word in `words`.
void expect_gguf_error(const TempDir& dir, std::span<const std::byte> bytes, std::initializer_list<std::string_view> words) {
  const std::filesystem::path path = dir / "bad.gguf";
  write_file(path, bytes);
  CHECK_THROWS_AS(GgufFile{path}, Error);
  const std::string message = gguf_open_error(path);
  CHECK_MESSAGE(message.find(path.string()) != std::string::npos, message);
  CHECK_MESSAGE(message.find('\n') == std::string::npos, message);
  for (const std::string_view word : words) {
    CHECK_MESSAGE(message.find(word) != std::string::npos, "expected '", word, "' in: ", message);
  }
}

GgufValue u(GgufValueType type, uint64_t v) { return {type, v}; }
GgufValue i(GgufValueType type, int64_t v) { return {type, v}; }
GgufValue str(std::string s) { return {GgufValueType::STRING, std::move(s)}; }

std::vector<std::byte> pattern_bytes(std::size_t n, int seed) {
  std::vector<std::byte> out(n);
  for (std::size_t k = 0; k < n; ++k) out[k] = static_cast<std::byte>((k * 7 + seed) & 0xff);
  return out;
}

// Every value type, including an empty array and arrays nested three deep.
GgufWriter every_value_type(uint32_t version) {
  GgufWriter w(version);
  w.add("u8", u(GgufValueType::UINT8, 255));
  w.add("i8", i(GgufValueType::INT8, -128));
  w.add("u16", u(GgufValueType::UINT16, 65535));
  w.add("i16", i(GgufValueType::INT16, -32768));
  w.add("u32", u(GgufValueType::UINT32, 4294967295u));
  w.add("i32", i(GgufValueType::INT32, std::numeric_limits<int32_t>::min()));
  w.add("f32", {GgufValueType::FLOAT32, double{-3.140625f}});
  w.add("bool.true", {GgufValueType::BOOL, true});
  w.add("bool.false", {GgufValueType::BOOL, false});
  w.add("string", str(std::string("h\xc3\xa9llo\0world", 12)));
  w.add("string.empty", str(""));
  w.add("u64", u(GgufValueType::UINT64, std::numeric_limits<uint64_t>::max()));
  w.add("i64", i(GgufValueType::INT64, std::numeric_limits<int64_t>::min()));
  w.add("f64", {GgufValueType::FLOAT64, 0.1});
  w.add("array.i32", gguf_array(GgufValueType::INT32, {i(GgufValueType::INT32, -1), i(GgufValueType::INT32, 2),
                                                       i(GgufValueType::INT32, 2147483647)}));
  w.add("array.f32",
        gguf_array(GgufValueType::FLOAT32, {{GgufValueType::FLOAT32, 0.5}, {GgufValueType::FLOAT32, -2.0}}));
  w.add("array.strings", gguf_array(GgufValueType::STRING, {str("a"), str(""), str("xyz")}));
  w.add("array.empty", gguf_array(GgufValueType::UINT8, {}));
  w.add("array.nested",
        gguf_array(GgufValueType::ARRAY,
                   {gguf_array(GgufValueType::ARRAY, {gguf_array(GgufValueType::UINT8, {u(GgufValueType::UINT8, 1),
                                                                                        u(GgufValueType::UINT8, 2)})}),
                    gguf_array(GgufValueType::ARRAY, {})}));
  w.add_tensor({"a", {4, 3}, static_cast<uint32_t>(GgmlType::F32), pattern_bytes(48, 1)});
  w.add_tensor({"b", {32}, static_cast<uint32_t>(GgmlType::Q4_0), pattern_bytes(18, 2)});
  w.add_tensor({"c", {256, 1, 1, 2}, static_cast<uint32_t>(GgmlType::Q4_K), pattern_bytes(288, 3)});
  return w;
}

}  // namespace

TEST_CASE("every metadata value type reads back exactly, GGUF v2 and v3") {
  for (const uint32_t version : {2u, 3u}) {
    CAPTURE(version);
    TempDir dir("pagedgen-gguf");
    const GgufWriter writer = every_value_type(version);
    write_file(dir / "all.gguf", writer.build().bytes);
    const GgufFile file(dir / "all.gguf");
    CHECK(file.version() == version);
    CHECK(file.alignment() == 32);
    REQUIRE(file.metadata().size() == 19);
    CHECK(file.metadata()[0].first == "u8");
    CHECK(file.metadata()[18].first == "array.nested");

    CHECK(file.find("u8")->type == GgufValueType::UINT8);
    CHECK(std::get<uint64_t>(file.find("u8")->value) == 255);
    CHECK(file.find("i8")->type == GgufValueType::INT8);
    CHECK(std::get<int64_t>(file.find("i8")->value) == -128);
    CHECK(std::get<uint64_t>(file.find("u16")->value) == 65535);
    CHECK(std::get<int64_t>(file.find("i16")->value) == -32768);
    CHECK(std::get<uint64_t>(file.find("u32")->value) == 4294967295u);
    CHECK(std::get<int64_t>(file.find("i32")->value) == std::numeric_limits<int32_t>::min());
    CHECK(file.find("f32")->type == GgufValueType::FLOAT32);
    CHECK(std::get<double>(file.find("f32")->value) == -3.140625);
    CHECK(std::get<bool>(file.find("bool.true")->value) == true);
    CHECK(std::get<bool>(file.find("bool.false")->value) == false);
    CHECK(std::get<std::string>(file.find("string")->value) == std::string("h\xc3\xa9llo\0world", 12));
    CHECK(std::get<std::string>(file.find("string.empty")->value).empty());
    CHECK(std::get<uint64_t>(file.find("u64")->value) == std::numeric_limits<uint64_t>::max());
    CHECK(std::get<int64_t>(file.find("i64")->value) == std::numeric_limits<int64_t>::min());
    CHECK(file.find("f64")->type == GgufValueType::FLOAT64);
    CHECK(std::get<double>(file.find("f64")->value) == 0.1);
    CHECK(file.find("missing") == nullptr);

    const auto& nested = std::get<GgufArray>(file.find("array.nested")->value);
    CHECK(nested.element_type == GgufValueType::ARRAY);
    REQUIRE(nested.items.size() == 2);
    const auto& level2 = std::get<GgufArray>(nested.items[0].value);
    REQUIRE(level2.items.size() == 1);
    const auto& level3 = std::get<GgufArray>(level2.items[0].value);
    CHECK(level3.element_type == GgufValueType::UINT8);
    REQUIRE(level3.items.size() == 2);
    CHECK(std::get<uint64_t>(level3.items[1].value) == 2);
    CHECK(std::get<GgufArray>(nested.items[1].value).items.empty());
    CHECK(std::get<GgufArray>(file.find("array.empty")->value).element_type == GgufValueType::UINT8);
  }
}

TEST_CASE("typed getters convert integer widths and refuse mismatched types") {
  TempDir dir("pagedgen-gguf");
  write_file(dir / "all.gguf", every_value_type(3).build().bytes);
  const GgufFile file(dir / "all.gguf");
  CHECK(file.get_uint("u8") == 255u);
  CHECK(file.get_uint("u32") == 4294967295u);
  CHECK(file.get_int("u16") == 65535);
  CHECK(file.get_int("i8") == -128);
  CHECK(file.get_int("i64") == std::numeric_limits<int64_t>::min());
  CHECK(file.get_uint("u64") == std::numeric_limits<uint64_t>::max());
  CHECK(file.get_float("f32") == -3.140625);
  CHECK(file.get_float("f64") == 0.1);
  CHECK(file.get_float("u16") == 65535.0);
  CHECK(file.get_bool("bool.true") == true);
  CHECK(file.get_string("string") == std::string("h\xc3\xa9llo\0world", 12));
  CHECK((file.get_string_array("array.strings") == std::vector<std::string>{"a", "", "xyz"}));
  CHECK((file.get_int_array("array.i32") == std::vector<int64_t>{-1, 2, 2147483647}));
  CHECK((file.get_float_array("array.f32") == std::vector<float>{0.5f, -2.0f}));
  CHECK((file.get_float_array("array.i32") == std::vector<float>{-1.0f, 2.0f, 2147483647.0f}));
  CHECK((file.get_int_array("array.empty") == std::vector<int64_t>{}));

  CHECK_FALSE(file.get_uint("missing").has_value());
  CHECK_FALSE(file.get_string("missing").has_value());
  CHECK_FALSE(file.get_string_array("missing").has_value());

  const auto message = [](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  CHECK_THROWS_AS(file.get_uint("i8"), Error);
  CHECK(message([&] { file.get_uint("i8"); }).find("'i8' is -128, expected a value >= 0") != std::string::npos);
  CHECK_THROWS_AS(file.get_int("u64"), Error);
  CHECK(message([&] { file.get_int("u64"); }).find("too large") != std::string::npos);
  CHECK_THROWS_AS(file.get_string("u32"), Error);
  CHECK(message([&] { file.get_string("u32"); }).find("'u32' is uint32, expected a string") != std::string::npos);
  CHECK_THROWS_AS(file.get_uint("string"), Error);
  CHECK_THROWS_AS(file.get_bool("u8"), Error);
  CHECK_THROWS_AS(file.get_float("string"), Error);
  CHECK_THROWS_AS(file.get_string_array("array.i32"), Error);
  CHECK(message([&] { file.get_string_array("array.i32"); }).find("array of int32, expected an array of strings") !=
        std::string::npos);
  CHECK_THROWS_AS(file.get_int_array("array.strings"), Error);
  CHECK_THROWS_AS(file.get_float_array("array.nested"), Error);
  CHECK_THROWS_AS(file.get_int_array("u8"), Error);
}

TEST_CASE("tensor directory: dims, types, offsets and data, default and custom alignment") {
  for (const uint64_t alignment : {32u, 64u, 1u, 256u}) {
    CAPTURE(alignment);
    TempDir dir("pagedgen-gguf");
    GgufWriter writer = every_value_type(3);
    writer.set_alignment(alignment);
    if (alignment != 32) writer.add("general.alignment", u(GgufValueType::UINT32, alignment));
    const GgufBytes built = writer.build();
    write_file(dir / "t.gguf", built.bytes);
    const GgufFile file(dir / "t.gguf");
    CHECK(file.alignment() == alignment);
    REQUIRE(file.tensors().size() == 3);
    const GgufTensorInfo& a = file.tensors()[0];
    CHECK(a.name == "a");
    CHECK((a.dims == std::vector<uint64_t>{4, 3}));
    CHECK(a.raw_type == static_cast<uint32_t>(GgmlType::F32));
    CHECK(a.offset == 0);
    CHECK(a.num_elements == 12);
    CHECK(a.num_bytes == 48);
    const GgufTensorInfo* b = file.find_tensor("b");
    REQUIRE(b != nullptr);
    CHECK(b->raw_type == static_cast<uint32_t>(GgmlType::Q4_0));
    CHECK(b->offset == (48 + alignment - 1) / alignment * alignment);
    CHECK(b->num_bytes == 18);
    const GgufTensorInfo* c = file.find_tensor("c");
    REQUIRE(c != nullptr);
    CHECK((c->dims == std::vector<uint64_t>{256, 1, 1, 2}));
    CHECK(c->num_elements == 512);
    CHECK(c->num_bytes == 288);
    CHECK(c->offset % alignment == 0);
    CHECK(file.find_tensor("d") == nullptr);
    for (const GgufTensorInfo& t : file.tensors()) {
      CAPTURE(t.name);
      const std::span<const std::byte> data = file.tensor_data(t);
      REQUIRE(data.size() == t.num_bytes);
      const std::size_t at = built.at("data") + t.offset;
      CHECK(std::memcmp(data.data(), built.bytes.data() + at, data.size()) == 0);
    }
    CHECK(file.tensor_data(a)[5] == static_cast<std::byte>(5 * 7 + 1));
  }
}

TEST_CASE("types with a layout but no dequantizer open; numbers with no layout do not") {
  TempDir dir("pagedgen-gguf");
  GgufWriter writer;
  writer.add_tensor({"iq", {256}, static_cast<uint32_t>(GgmlType::IQ2_XXS), pattern_bytes(66, 0)});
  writer.add_tensor({"q81", {32}, static_cast<uint32_t>(GgmlType::Q8_1), pattern_bytes(36, 0)});
  write_file(dir / "iq.gguf", writer.build().bytes);
  const GgufFile file(dir / "iq.gguf");
  CHECK(file.tensors()[0].num_bytes == 66);
  CHECK(file.tensors()[1].num_bytes == 36);

  GgufWriter unknown;
  unknown.add_tensor({"old", {32}, 4, pattern_bytes(20, 0)});  // 4 was Q4_2, long removed
  expect_gguf_error(dir, unknown.build().bytes, {"'old'", "unknown ggml type number 4"});
}

TEST_CASE("the default model's directory") {
  const auto model = default_model();
  if (!model) {
    MESSAGE("default model not installed (scripts/fetch-model.sh); skipping");
    return;
  }
  const GgufFile file(*model);
  CHECK(file.version() == 3);
  CHECK(file.alignment() == 32);
  CHECK(file.tensors().size() == 272);
  CHECK(file.get_string("general.architecture") == "llama");
  CHECK(file.get_uint("llama.block_count") == 30u);
  CHECK(file.get_uint("llama.embedding_length") == 576u);
  CHECK(file.get_string_array("tokenizer.ggml.tokens")->size() == 49152);
  const GgufTensorInfo* embd = file.find_tensor("token_embd.weight");
  REQUIRE(embd != nullptr);
  CHECK((embd->dims == std::vector<uint64_t>{576, 49152}));
  CHECK(embd->raw_type == static_cast<uint32_t>(GgmlType::Q8_0));
  CHECK(embd->num_bytes == 576ull * 49152 / 32 * 34);
  // Absolute file offsets from the gguf Python package: token_embd.weight at 1785664,
  // blk.0.attn_norm.weight at 31866688.
  const GgufTensorInfo* norm = file.find_tensor("blk.0.attn_norm.weight");
  REQUIRE(norm != nullptr);
  CHECK(norm->raw_type == static_cast<uint32_t>(GgmlType::F32));
  CHECK(file.tensor_data(*norm).data() - file.tensor_data(*embd).data() == 31866688 - 1785664);
}

TEST_CASE("a file cut at any byte throws 'truncated'") {
  TempDir dir("pagedgen-gguf");
  const GgufBytes built = small_gguf().build();
  {
    write_file(dir / "whole.gguf", built.bytes);
    const GgufFile whole(dir / "whole.gguf");
    CHECK(whole.tensors().size() == 2);
  }
  for (std::size_t cut = 0; cut < built.bytes.size(); ++cut) {
    CAPTURE(cut);
    const std::span<const std::byte> prefix(built.bytes.data(), cut);
    if (cut < 4) {
      expect_gguf_error(dir, prefix, {"not a GGUF file"});
    } else {
      expect_gguf_error(dir, prefix, {"truncated"});
    }
  }
}

TEST_CASE("corrupt headers and directories each throw a message naming the problem") {
  TempDir dir("pagedgen-gguf");
  const GgufBytes good = small_gguf().build();

  SUBCASE("bad magic") {
    GgufBytes b = good;
    b.bytes[3] = std::byte{'X'};
    expect_gguf_error(dir, b.bytes, {"not a GGUF file (magic 47 47 55 58"});
    const std::string elf =
        "\x7f"
        "ELF and then some";
    std::vector<std::byte> not_gguf(elf.size());
    std::memcpy(not_gguf.data(), elf.data(), elf.size());
    expect_gguf_error(dir, not_gguf, {"not a GGUF file (magic 7f 45 4c 46"});
    expect_gguf_error(dir, std::span<const std::byte>{}, {"not a GGUF file", "empty"});
  }
  SUBCASE("bad version") {
    GgufBytes b = good;
    b.patch_u32(b.at("version"), 1);
    expect_gguf_error(dir, b.bytes, {"unsupported GGUF version 1"});
    b.patch_u32(b.at("version"), 4);
    expect_gguf_error(dir, b.bytes, {"unsupported GGUF version 4"});
    b.patch_u32(b.at("version"), 0x03000000);
    expect_gguf_error(dir, b.bytes, {"big-endian"});
  }
  SUBCASE("tensor offset past the end") {
    GgufBytes b = good;
    b.patch_u64(b.at("offset:norm.weight"), 1 << 20);
    expect_gguf_error(dir, b.bytes, {"'norm.weight'", "past the end"});
    b.patch_u64(b.at("offset:norm.weight"), std::numeric_limits<uint64_t>::max() & ~uint64_t{31});
    expect_gguf_error(dir, b.bytes, {"'norm.weight'", "past the end"});
  }
  SUBCASE("misaligned tensor offset") {
    GgufBytes b = good;
    b.patch_u64(b.at("offset:norm.weight"), 68);
    expect_gguf_error(dir, b.bytes, {"'norm.weight'", "offset 68", "not a multiple of the alignment 32"});
  }
  SUBCASE("huge array length does not allocate") {
    GgufBytes b = good;
    b.patch_u64(b.at("value:test.words") + 4, uint64_t{1} << 60);
    expect_gguf_error(dir, b.bytes, {"'test.words'", "1152921504606846976 elements"});
  }
  SUBCASE("huge string length") {
    GgufBytes b = good;
    b.patch_u64(b.at("value:general.architecture"), uint64_t{1} << 62);
    expect_gguf_error(dir, b.bytes, {"string length 4611686018427387904", "'general.architecture'"});
    GgufBytes k = good;
    k.patch_u64(k.at("kv:test.count"), std::numeric_limits<uint64_t>::max());
    expect_gguf_error(dir, k.bytes, {"string length 18446744073709551615", "metadata key"});
  }
  SUBCASE("huge counts in the header") {
    GgufBytes b = good;
    b.patch_u64(b.at("tensor_count"), uint64_t{1} << 59);
    expect_gguf_error(dir, b.bytes, {"576460752303423488 tensors"});
    GgufBytes k = good;
    k.patch_u64(k.at("kv_count"), uint64_t{1} << 59);
    expect_gguf_error(dir, k.bytes, {"576460752303423488 metadata keys"});
  }
  SUBCASE("unknown value type and bad bool") {
    GgufBytes b = good;
    b.patch_u32(b.at("value:test.count") - 4, 13);
    expect_gguf_error(dir, b.bytes, {"unknown metadata value type 13", "'test.count'"});
    GgufBytes e = good;
    e.patch_u32(e.at("value:test.words"), 99);
    expect_gguf_error(dir, e.bytes, {"unknown metadata value type 99", "'test.words'"});
    GgufWriter w;
    w.add("flag", {GgufValueType::BOOL, true});
    GgufBytes f = w.build();
    f.bytes[f.at("value:flag")] = std::byte{2};
    expect_gguf_error(dir, f.bytes, {"'flag'", "not 0 or 1"});
  }
  SUBCASE("unknown tensor type number") {
    GgufBytes b = good;
    b.patch_u32(b.at("type:norm.weight"), 1000);
    expect_gguf_error(dir, b.bytes, {"'norm.weight'", "unknown ggml type number 1000"});
  }
  SUBCASE("duplicate keys and tensor names") {
    GgufWriter w = small_gguf();
    w.add("test.count", u(GgufValueType::UINT8, 1));
    expect_gguf_error(dir, w.build().bytes, {"duplicate metadata key 'test.count'"});
    GgufWriter t = small_gguf();
    t.add_tensor({"norm.weight", {8}, static_cast<uint32_t>(GgmlType::F32), pattern_bytes(32, 0)});
    expect_gguf_error(dir, t.build().bytes, {"duplicate tensor name 'norm.weight'"});
  }
  SUBCASE("dimensions") {
    GgufWriter overflow;
    overflow.add_tensor({"big", {uint64_t{1} << 32, uint64_t{1} << 32}, 0, {}});
    expect_gguf_error(dir, overflow.build().bytes, {"'big'", "4294967296 x 4294967296", "multiply past"});
    GgufWriter wide;  // 3 * 2^61 elements fit in int64, but 8 bytes each wrap a u64 to 0
    wide.add_tensor({"wide", {uint64_t{1} << 61, 3}, static_cast<uint32_t>(GgmlType::F64), {}});
    expect_gguf_error(dir, wide.build().bytes, {"'wide'", "6917529027641081856 elements of F64", "more bytes than 2^64"});
    GgufWriter partial;
    partial.add_tensor({"q", {16, 2}, static_cast<uint32_t>(GgmlType::Q8_0), pattern_bytes(34, 0)});
    expect_gguf_error(dir, partial.build().bytes, {"'q'", "not a multiple of the Q8_0 block size 32"});
    GgufWriter five;
    five.add_tensor({"five", {1, 1, 1, 1, 1}, 0, pattern_bytes(4, 0)});
    expect_gguf_error(dir, five.build().bytes, {"'five'", "5 dimensions"});
  }
  SUBCASE("arrays nested too deep") {
    GgufValue value = gguf_array(GgufValueType::UINT8, {});
    for (int depth = 0; depth < 4; ++depth) value = gguf_array(GgufValueType::ARRAY, {value});
    GgufWriter w;
    w.add("deep", value);
    expect_gguf_error(dir, w.build().bytes, {"'deep'", "nests arrays deeper than 4"});
  }
  SUBCASE("bad general.alignment") {
    for (const uint64_t alignment : {0u, 24u}) {
      GgufWriter w = small_gguf();
      w.add("general.alignment", u(GgufValueType::UINT32, alignment));
      expect_gguf_error(dir, w.build().bytes, {"general.alignment must be a nonzero power of two"});
    }
    GgufWriter s = small_gguf();
    s.add("general.alignment", str("32"));
    expect_gguf_error(dir, s.build().bytes, {"general.alignment' is string, expected an unsigned integer"});
  }
  SUBCASE("control bytes in names are escaped, keeping the message one line") {
    GgufWriter w;
    w.add_tensor({"evil\nname", {32}, 4, {}});
    expect_gguf_error(dir, w.build().bytes, {"'evil\\x0aname'"});
  }
}

namespace {

// A GGUF v3 file with no tensors and one key, `key`, a uint8 array of `count` zero bytes.
std::vector<std::byte> byte_array_gguf(const std::string& key, uint64_t count) {
  std::vector<std::byte> bytes;
  const auto put = [&](uint64_t value, int width) {
    for (int k = 0; k < width; ++k) bytes.push_back(static_cast<std::byte>((value >> (8 * k)) & 0xff));
  };
  for (const char c : std::string_view("GGUF")) bytes.push_back(static_cast<std::byte>(c));
  put(3, 4);  // version
  put(0, 8);  // tensor count
  put(1, 8);  // metadata key count
  put(key.size(), 8);
  for (const char c : key) bytes.push_back(static_cast<std::byte>(c));
  put(9, 4);  // ARRAY
  put(0, 4);  // of UINT8
  put(count, 8);
  bytes.resize(bytes.size() + count);
  return bytes;
}

}  // namespace

// Each array element once became a 48-byte GgufValue, so a file of byte arrays took ~50x
// its size in memory (a 0.5 GB file, 24 GB). Metadata memory is now bounded by the file's
// size plus 128 MiB: the refusal comes before the allocation.
TEST_CASE("metadata that would take far more memory than the file is refused") {
  TempDir dir("pagedgen-gguf-budget");
  // 4 MiB of uint8 elements would take ~200 MB parsed: past 4 MiB + 128 MiB.
  expect_gguf_error(dir, byte_array_gguf("big.bytes", uint64_t{4} << 20),
               {"'big.bytes'", "would take the parsed metadata past", "the file's size plus 128 MiB"});
  // 1 MiB of them (~50 MB parsed) is within the bound and reads back.
  const std::filesystem::path path = dir / "ok.gguf";
  write_file(path, byte_array_gguf("ok.bytes", uint64_t{1} << 20));
  const GgufFile file(path);
  CHECK(std::get<GgufArray>(file.find("ok.bytes")->value).items.size() == (uint64_t{1} << 20));
}
