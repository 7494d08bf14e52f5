// Phi-3's fused tensors split into row views (model/fused_tensors.h): exact byte ranges,
// names, other tensors untouched, and a wrong row count named in the error.
#include <doctest/doctest.h>

#include <cstddef>
#include <vector>

#include "model/fused_tensors.h"
#include "util/error.h"

using namespace pagedgen;

namespace {

ModelConfig fused_config() {
  ModelConfig c;
  c.num_layers = 1;
  c.hidden_size = 32;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.intermediate_size = 3;
  return c;
}

}  // namespace

TEST_CASE("attn_qkv and a gate/up ffn_up split into the Q, K, V, gate and up rows") {
  // Q8_0 rows of 32 values: 34 bytes each. qkv: 32 Q rows, 16 K rows, 16 V rows.
  std::vector<std::byte> qkv(64 * 34), up(6 * 34), norm(32 * 4);
  const RawTensor tensors[] = {
      {"blk.0.attn_qkv.weight", "blk.0.attn_qkv.weight", {64, 32}, 8, qkv},
      {"blk.0.ffn_up.weight", "blk.0.ffn_up.weight", {6, 32}, 8, up},
      {"blk.0.attn_norm.weight", "blk.0.attn_norm.weight", {32}, 0, norm},
  };
  const std::vector<RawTensor> split = split_fused_tensors(tensors, fused_config(), "m.gguf");
  REQUIRE(split.size() == 6);
  const auto check = [&](std::size_t i, const char* name, uint64_t rows, const std::byte* first) {
    CAPTURE(name);
    CHECK(split[i].name == name);
    CHECK(split[i].shape == std::vector<uint64_t>{rows, 32});
    CHECK(split[i].data.data() == first);
    CHECK(split[i].data.size() == rows * 34);
    CHECK(split[i].raw_type == 8);
  };
  check(0, "blk.0.attn_q.weight", 32, qkv.data());
  check(1, "blk.0.attn_k.weight", 16, qkv.data() + 32 * 34);
  check(2, "blk.0.attn_v.weight", 16, qkv.data() + 48 * 34);
  check(3, "blk.0.ffn_gate.weight", 3, up.data());
  check(4, "blk.0.ffn_up.weight", 3, up.data() + 3 * 34);
  CHECK(split[1].stored_name == "blk.0.attn_qkv.weight (rows 32 to 47)");
  CHECK(split[5].name == "blk.0.attn_norm.weight");
}

TEST_CASE("an ffn_up beside an ffn_gate is left alone; a fused tensor of the wrong size is refused") {
  std::vector<std::byte> gate(3 * 34), up(3 * 34), qkv(60 * 34);
  const RawTensor separate[] = {
      {"blk.0.ffn_gate.weight", "g", {3, 32}, 8, gate},
      {"blk.0.ffn_up.weight", "u", {3, 32}, 8, up},
  };
  CHECK(split_fused_tensors(separate, fused_config(), "m.gguf").size() == 2);
  const RawTensor wrong[] = {{"blk.0.attn_qkv.weight", "blk.0.attn_qkv.weight", {60, 32}, 8, qkv}};
  CHECK_THROWS_WITH_AS(split_fused_tensors(wrong, fused_config(), "m.gguf"),
                       "m.gguf: tensor 'blk.0.attn_qkv.weight' has shape 60x32, expected 64x32 for this model's "
                       "config (attn_q 32 rows + attn_k 16 rows + attn_v 16 rows)",
                       Error);
}
