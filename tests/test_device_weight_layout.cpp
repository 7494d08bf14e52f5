// The CUDA backend's weight layout (model/device_weight_layout.h): sizes and offsets of a
// tiny config, worked out by hand, in each dtype, with and without a separate output head
// and QKV bias.
#include <doctest/doctest.h>

#include <algorithm>

#include "model/device_weight_layout.h"

using namespace pagedgen;

namespace {

// vocab 10, hidden 8, 2 heads of 4 (q_dim 8), 1 KV head (kv_dim 4), ffn 12, 2 layers,
// a separate output head, QKV bias, 4 rotated dims (2 RoPE frequencies).
ModelConfig tiny_config() {
  ModelConfig c;
  c.architecture = "llama";
  c.num_layers = 2;
  c.hidden_size = 8;
  c.intermediate_size = 12;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.head_dim = 4;
  c.rope_dim = 4;
  c.vocab_size = 10;
  c.qkv_bias = true;
  return c;
}

}  // namespace

TEST_CASE("layout: sizes and offsets of a tiny model, worked out by hand") {
  // bfloat16: 128 elements per 256-byte line; every group starts on a line.
  //   typed: token_embd 80 [0, 80) -> 128; output 80 [128, 208) -> 256;
  //     layer 0: q 64 at 256, k 32 at 320, v 32 at 352 -> 384; wo 64 -> 448 -> 512;
  //              gate 96 at 512, up 96 at 608 -> 704 -> 768; down 96 -> 864 -> 896;
  //     layer 1: q at 896, k at 960, v at 992 -> 1024; wo -> 1088 -> 1152;
  //              gate at 1152, up at 1248 -> 1344 -> 1408; down at 1408 -> 1504 -> 1536.
  //   1536 elements = 3072 bytes.
  //   float32 (64 per line): output_norm 8 at 0, rope 2 at 8 -> 10 -> 64;
  //     layer 0: attn_norm 8 at 64, ffn_norm 8 at 72 -> 80 -> 128; bq 8 at 128, bk 4 at 136,
  //              bv 4 at 140 -> 144 -> 192; layer 1: norms at 192 -> 256; biases at 256 -> 320.
  //   320 floats = 1280 bytes.
  const DeviceWeightLayout bf16(tiny_config(), WeightDtype::kBFloat16);
  CHECK(bf16.typed_bytes() == 3072);
  CHECK(bf16.float32_bytes() == 1280);
  CHECK(bf16.bytes() == 4352);
  CHECK(bf16.at("blk.1.attn_k.weight").offset == 960);
  CHECK(bf16.at("blk.1.ffn_up.weight").offset == 1248);
  CHECK(bf16.at("blk.1.ffn_down.weight").offset == 1408);
  CHECK(bf16.at("blk.1.attn_v.bias").offset == 268);
  CHECK(bf16.at("rope_inv_freq").num_elements == 2);
  CHECK_FALSE(bf16.at("blk.0.attn_norm.weight").typed);
  CHECK(DeviceWeightLayout(tiny_config(), WeightDtype::kFloat16).bytes() == 4352);
  // float32: 64 elements per line. token_embd -> 128; output -> 256; layer 0: qkv 128 -> 384,
  // wo 64 -> 448, gate/up 192 -> 640, down 96 -> 768; layer 1: qkv -> 896, wo -> 960,
  // gate/up -> 1152, down -> 1280. 1280 floats = 5120 bytes, + the same 1280 float32 bytes.
  const DeviceWeightLayout f32(tiny_config(), WeightDtype::kFloat32);
  CHECK(f32.typed_bytes() == 5120);
  CHECK(f32.bytes() == 6400);
  CHECK(f32.at("blk.1.attn_q.weight").offset == 768);
  // Tied embeddings, no bias, bfloat16: token_embd -> 128; layer 0: qkv -> 256, wo -> 384,
  // gate/up -> 640, down -> 768; layer 1: qkv -> 896, wo -> 1024, gate/up -> 1280, down -> 1408:
  // 2816 bytes. float32: 10 -> 64, norms -> 128, -> 192: 768 bytes.
  ModelConfig tied = tiny_config();
  tied.tied_embeddings = true;
  tied.qkv_bias = false;
  const DeviceWeightLayout small(tied, WeightDtype::kBFloat16);
  CHECK(small.typed_bytes() == 2816);
  CHECK(small.float32_bytes() == 768);
  CHECK(std::ranges::none_of(small.placements(), [](const WeightPlacement& p) { return p.name == "output.weight"; }));
}
