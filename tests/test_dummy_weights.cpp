// --load-format dummy on the host: the sample 8B config parses to the Llama-3-8B shape;
// dummy values are deterministic, within their scale, and the same through the shared
// host/device function the CUDA fill uses; norm weights are ones.
#include <doctest/doctest.h>

#include <cmath>

#include "model/dummy_values.h"
#include "model/dummy_weights.h"
#include "test_paths.h"
#include "util/error.h"

using namespace pagedgen;

TEST_CASE("samples/llama-3-8b.config.json is the Llama-3-8B shape") {
  const ModelConfig c = dummy_model_config(test::source_dir() / "samples" / "llama-3-8b.config.json");
  CHECK(c.hidden_size == 4096);
  CHECK(c.num_layers == 32);
  CHECK(c.num_heads == 32);
  CHECK(c.num_kv_heads == 8);
  CHECK(c.head_dim == 128);
  CHECK(c.intermediate_size == 14336);
  CHECK(c.vocab_size == 128256);
  CHECK(c.context_length == 8192);
  CHECK(c.rope_theta == 500000.0f);
  CHECK(!c.tied_embeddings);
  uint64_t parameters = 0;
  for (const DummyTensor& t : dummy_tensors(c)) parameters += t.num_elements();
  CHECK(parameters == 8030261248ULL);  // Llama-3-8B's published parameter count
}

TEST_CASE("a directory holding config.json works too; a missing file says what is needed") {
  const ModelConfig c = dummy_model_config(test::source_dir() / "samples" / "smollm2-135m.config.json");
  CHECK(c.tied_embeddings);
  CHECK(c.head_dim == 64);
  CHECK_THROWS_WITH_AS(dummy_model_config(test::source_dir() / "samples"), doctest::Contains("needs an HF config.json"),
                       Error);
}

TEST_CASE("dummy weights: deterministic, within scale, ones for norms") {
  ModelConfig c;
  c.num_layers = 2;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.rope_dim = 8;
  c.vocab_size = 20;
  c.context_length = 64;
  const ModelWeights a = make_dummy_weights(c, 5);
  const ModelWeights b = make_dummy_weights(c, 5);
  const ModelWeights other = make_dummy_weights(c, 6);
  CHECK(a.num_parameters == 20 * 32 + 32 + 20 * 32 + 2 * (32 + 32 * 32 + 16 * 32 * 2 + 32 * 32 + 32 + 48 * 32 * 3));
  CHECK(a.layers[1].w_down[17] == b.layers[1].w_down[17]);
  CHECK(a.layers[1].w_down[17] != other.layers[1].w_down[17]);
  for (int i = 0; i < 32; ++i) CHECK(a.layers[0].attn_norm[i] == 1.0f);
  const float scale = 1.0f / std::sqrt(32.0f);
  bool within = true;
  for (int i = 0; i < 32 * 32; ++i) within = within && std::abs(a.layers[0].wq[i]) <= scale;
  CHECK(within);
  // Element 3 of tensor 4 (blk.0.attn_q.weight after token_embd, output_norm, output,
  // blk.0.attn_norm).
  CHECK(dummy_tensors(c)[4].name == "blk.0.attn_q.weight");
  CHECK(a.layers[0].wq[3] == dummy_value(5, 4, 3, scale));
}
