// Chunked conversion (model/tensor_chunks.h): for every type dequantize() reads and every
// weight dtype, converting a tensor chunk by chunk, at chunk sizes that cut it unevenly,
// gives exactly the bytes of converting it whole, and those are dequantize()'s floats
// rounded once; the chunks are whole blocks that tile the tensor.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "model/dequant.h"
#include "model/tensor_chunks.h"
#include "random_blocks.h"
#include "util/half.h"

using namespace pagedgen;

namespace {

constexpr WeightDtype kDtypes[] = {WeightDtype::kFloat32, WeightDtype::kFloat16, WeightDtype::kBFloat16};

// An odd number of blocks: 1001 values of a plain type, 37 blocks of 32, 7 of 256.
std::size_t test_blocks(const GgmlTypeLayout& layout) {
  return layout.block_elements == 1 ? 1001 : layout.block_elements == 32 ? 37 : 7;
}

}  // namespace

TEST_CASE("chunks tile the tensor in whole blocks of at most max_chunk_bytes") {
  // Q4_K: 256 values in 144 bytes. 10 blocks at 500 bytes: 3 blocks (432 bytes) per chunk.
  const std::vector<TensorChunk> chunks = tensor_chunks(GgmlType::Q4_K, 2560, 500);
  REQUIRE(chunks.size() == 4);
  CHECK(chunks[0].first_element == 0);
  CHECK(chunks[0].num_elements == 768);
  CHECK(chunks[0].num_bytes == 432);
  CHECK(chunks[3].first_element == 2304);
  CHECK(chunks[3].first_byte == 1296);
  CHECK(chunks[3].num_elements == 256);
  CHECK(chunks[3].num_bytes == 144);
  // A chunk smaller than one block still moves one block.
  const std::vector<TensorChunk> one = tensor_chunks(GgmlType::Q6_K, 512, 1);
  REQUIRE(one.size() == 2);
  CHECK(one[1].first_byte == 210);
  CHECK(one[1].num_bytes == 210);
  CHECK(tensor_chunks(GgmlType::F32, 0, 64).empty());
}

TEST_CASE("chunked conversion gives the whole tensor's bytes for every type and dtype") {
  for (const GgmlType type : test::kConvertibleTypes) {
    const GgmlTypeLayout layout = *ggml_type_layout(static_cast<uint32_t>(type));
    const std::size_t num_blocks = test_blocks(layout);
    const std::size_t num_elements = num_blocks * layout.block_elements;
    const std::vector<std::byte> stored = test::random_blocks(type, num_blocks, 7 + static_cast<uint32_t>(type));
    std::vector<float> floats(num_elements);
    dequantize(type, stored, floats);
    for (const WeightDtype dtype : kDtypes) {
      CAPTURE(ggml_type_name(type));
      CAPTURE(weight_dtype_name(dtype));
      const std::size_t element_bytes = weight_dtype_bytes(dtype);
      std::vector<std::byte> whole(num_elements * element_bytes);
      convert_chunk(type, stored, dtype, whole);
      // The whole conversion is dequantize(), rounded once to nearest even.
      for (std::size_t i = 0; i < num_elements; ++i) {
        uint32_t expected = 0, got = 0;
        if (dtype == WeightDtype::kFloat32)
          expected = float_bits(floats[i]);
        else
          expected = dtype == WeightDtype::kFloat16 ? float_to_half(floats[i]) : float_to_bfloat16(floats[i]);
        std::memcpy(&got, whole.data() + i * element_bytes, element_bytes);
        REQUIRE(got == expected);
      }
      // Chunks of one block, of a few blocks and 5 stray bytes, of nearly everything, of more than all.
      for (const std::size_t max_chunk_bytes :
           {std::size_t{1}, std::size_t{3} * layout.block_bytes + 5, stored.size() - 1, stored.size() + 100}) {
        CAPTURE(max_chunk_bytes);
        std::vector<std::byte> chunked(whole.size(), std::byte{0xA5});
        std::size_t next_element = 0;
        for (const TensorChunk& chunk : tensor_chunks(type, num_elements, max_chunk_bytes)) {
          REQUIRE(chunk.first_element == next_element);
          REQUIRE(chunk.first_byte == chunk.first_element / layout.block_elements * layout.block_bytes);
          REQUIRE((chunk.num_bytes <= max_chunk_bytes || chunk.num_bytes == layout.block_bytes));
          convert_chunk(
              type, std::span(stored).subspan(chunk.first_byte, chunk.num_bytes), dtype,
              std::span(chunked).subspan(chunk.first_element * element_bytes, chunk.num_elements * element_bytes));
          next_element += chunk.num_elements;
        }
        REQUIRE(next_element == num_elements);
        REQUIRE(chunked == whole);
      }
    }
  }
}
