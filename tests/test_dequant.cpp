// Dequantization against reference vectors from the gguf Python package
// (scripts/make-dequant-vectors.py -> tests/data/dequant_vectors.bin), compared bit for
// bit: every product in these formats is exact in float, so each value rounds at most once
// and any correct implementation gives the same bits; NaN payloads are kept by both sides.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <vector>

#include "model/dequant.h"
#include "test_paths.h"
#include "util/error.h"

using namespace pagedgen;

namespace {

struct VectorRecord {
  uint32_t raw_type;
  std::vector<std::byte> bytes;
  std::vector<uint32_t> expected_bits;  // float32 bit patterns
};

uint32_t read_u32(const std::vector<char>& file, std::size_t& at) {
  REQUIRE(at + 4 <= file.size());
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= static_cast<uint32_t>(static_cast<uint8_t>(file[at + i])) << (8 * i);
  at += 4;
  return value;
}

std::vector<VectorRecord> load_vectors() {
  const auto path = test::data_dir() / "dequant_vectors.bin";
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing ", path.string(), "; run scripts/make-dequant-vectors.py");
  const std::vector<char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(file.size() >= 8);
  REQUIRE(std::memcmp(file.data(), "PGDV", 4) == 0);
  std::size_t at = 4;
  const uint32_t count = read_u32(file, at);
  std::vector<VectorRecord> records;
  for (uint32_t r = 0; r < count; ++r) {
    VectorRecord record;
    record.raw_type = read_u32(file, at);
    const uint32_t num_elements = read_u32(file, at);
    const uint32_t num_bytes = read_u32(file, at);
    REQUIRE(at + num_bytes + 4ull * num_elements <= file.size());
    record.bytes.resize(num_bytes);
    std::memcpy(record.bytes.data(), file.data() + at, num_bytes);
    at += num_bytes;
    for (uint32_t i = 0; i < num_elements; ++i) record.expected_bits.push_back(read_u32(file, at));
    records.push_back(std::move(record));
  }
  CHECK(at == file.size());
  return records;
}

std::string error_message(GgmlType type) {
  std::vector<float> out(256);
  std::vector<std::byte> in(ggml_type_layout(static_cast<uint32_t>(type))->block_bytes);
  try {
    dequantize(type, in, out);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every supported type matches gguf-py bit for bit") {
  const std::vector<VectorRecord> records = load_vectors();
  std::map<uint32_t, int> records_per_type;
  for (const VectorRecord& record : records) {
    const auto type = static_cast<GgmlType>(record.raw_type);
    CAPTURE(ggml_type_name(type));
    REQUIRE(can_dequantize(type));
    std::vector<float> out(record.expected_bits.size(), -12345.0f);
    dequantize(type, record.bytes, out);
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
      const uint32_t got = std::bit_cast<uint32_t>(out[i]);
      if (got != record.expected_bits[i] && mismatches++ < 5) {
        FAIL_CHECK(fmt::format("element {}: got {} ({:#010x}), expected {} ({:#010x})", i, out[i], got,
                               std::bit_cast<float>(record.expected_bits[i]), record.expected_bits[i]));
      }
    }
    CHECK(mismatches == 0);
    ++records_per_type[record.raw_type];
  }
  // Each supported type is covered (the quantized ones by random and quantized blocks).
  for (const GgmlType type :
       {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
        GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    CAPTURE(ggml_type_name(type));
    CHECK(records_per_type[static_cast<uint32_t>(type)] >= 1);
  }
}

TEST_CASE("hand-worked blocks") {
  // Q4_0: d = 2.0 (f16 0x4000); byte 0x1f holds element 0 (low nibble 15) and element 16
  // (high nibble 1): (15 - 8) * 2 = 14 and (1 - 8) * 2 = -14.
  std::vector<std::byte> q4(18, std::byte{0x88});  // nibble 8 -> 0
  q4[0] = std::byte{0x00};
  q4[1] = std::byte{0x40};
  q4[2] = std::byte{0x1f};
  std::vector<float> out(32);
  dequantize(GgmlType::Q4_0, q4, out);
  CHECK(out[0] == 14.0f);
  CHECK(out[16] == -14.0f);
  CHECK(out[1] == 0.0f);
  CHECK(out[31] == 0.0f);

  // Q8_0 with d = -0.5 (0xb800): q = -128 -> 64, q = 3 -> -1.5.
  std::vector<std::byte> q8(34, std::byte{0});
  q8[1] = std::byte{0xb8};
  q8[2] = std::byte{0x80};
  q8[33] = std::byte{3};
  dequantize(GgmlType::Q8_0, q8, out);
  CHECK(out[0] == 64.0f);
  CHECK(out[31] == -1.5f);
  CHECK(out[1] == 0.0f);

  // BF16 0x3fc0 is 1.5; F16 0x0001 is the smallest subnormal, 2^-24.
  const std::vector<std::byte> bf16{std::byte{0xc0}, std::byte{0x3f}, std::byte{0x01}, std::byte{0x00}};
  std::vector<float> two(2);
  dequantize(GgmlType::BF16, bf16, two);
  CHECK(two[0] == 1.5f);
  dequantize(GgmlType::F16, bf16, two);
  CHECK(two[1] == 0x1p-24f);
}

TEST_CASE("types without a dequantizer throw Error naming the type") {
  for (const GgmlType type : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q8_1, GgmlType::Q8_K, GgmlType::IQ2_XXS,
                              GgmlType::IQ4_NL, GgmlType::TQ1_0, GgmlType::I8, GgmlType::I32, GgmlType::F64}) {
    const std::string name = ggml_type_name(type);
    CAPTURE(name);
    CHECK_FALSE(can_dequantize(type));
    const std::string message = error_message(type);
    CHECK_MESSAGE(message.find("cannot dequantize tensor type " + name + ":") != std::string::npos, message);
  }
  std::vector<float> out(256);
  std::vector<std::byte> in(84);
  CHECK_THROWS_AS(dequantize(GgmlType::Q2_K, in, out), Error);
}

TEST_CASE("zero elements is fine") {
  std::vector<float> out;
  std::vector<std::byte> in;
  dequantize(GgmlType::Q4_K, in, out);
  CHECK(out.empty());
}
