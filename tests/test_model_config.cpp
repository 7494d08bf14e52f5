// Model configs from HF config.json texts and from the default model's GGUF metadata.
#include <doctest/doctest.h>

#include "model/gguf.h"
#include "model/model_config.h"
#include "test_paths.h"
#include "util/error.h"

using namespace pagedgen;

TEST_CASE("an HF Llama 3.1 config with llama3 RoPE scaling") {
  const char* json = R"({
    "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "vocab_size": 128256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0, "tie_word_embeddings": false,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"}})";
  const ModelConfig c = model_config_from_hf_json(json, "config.json");
  CHECK(c.num_layers == 32);
  CHECK(c.head_dim == 128);
  CHECK(c.num_kv_heads == 8);
  CHECK(c.rope_layout == RopeLayout::HalfSplit);
  CHECK(c.rope_theta == 500000.0f);
  REQUIRE(c.rope_scaling.has_value());
  CHECK(c.rope_scaling->original_context_length == 8192);
  CHECK_FALSE(c.qkv_bias);
  // 2 (K,V) * 32 layers * 8 heads * 128 dims * 2 bytes
  CHECK(c.kv_bytes_per_token(2) == 131072);
}

TEST_CASE("an HF Qwen2 config has QKV bias; Mistral's sliding window caps the context") {
  const ModelConfig qwen = model_config_from_hf_json(R"({"model_type": "qwen2", "hidden_size": 896,
      "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
      "num_key_value_heads": 2, "vocab_size": 151936, "max_position_embeddings": 32768,
      "rope_theta": 1000000.0, "tie_word_embeddings": true, "sliding_window": null})", "q/config.json");
  CHECK(qwen.qkv_bias);
  CHECK(qwen.tied_embeddings);
  CHECK(qwen.head_dim == 64);
  CHECK(qwen.context_length == 32768);

  const ModelConfig mistral = model_config_from_hf_json(R"({"model_type": "mistral", "hidden_size": 4096,
      "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
      "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 32768,
      "sliding_window": 4096})", "m/config.json");
  CHECK(mistral.context_length == 4096);
}

TEST_CASE("bad HF configs are errors that name the file and the key") {
  CHECK_THROWS_WITH_AS(model_config_from_hf_json(R"({"model_type": "gpt2"})", "x/config.json"),
                       doctest::Contains("model_type 'gpt2' is not supported"), Error);
  CHECK_THROWS_WITH_AS(model_config_from_hf_json(R"({"model_type": "llama", "hidden_size": 64})", "x/config.json"),
                       doctest::Contains("missing key 'num_hidden_layers'"), Error);
  CHECK_THROWS_WITH_AS(model_config_from_hf_json("[1, 2", "x/config.json"), doctest::Contains("x/config.json"), Error);
  CHECK_THROWS_WITH_AS(
      model_config_from_hf_json(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 3, "num_key_value_heads": 2, "vocab_size": 10,
        "max_position_embeddings": 64})", "x/config.json"),
      doctest::Contains("not a multiple"), Error);
  CHECK_THROWS_WITH_AS(
      model_config_from_hf_json(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": "big"})",
                                "x/config.json"),
      doctest::Contains("'hidden_size' must be an integer"), Error);
}

TEST_CASE("the default model's GGUF config") {
  const auto model = test::default_model();
  if (!model) {
    MESSAGE("skipped: the default model is not installed (scripts/fetch-model.sh)");
    return;
  }
  const GgufFile gguf(*model);
  const ModelConfig c = model_config_from_gguf(gguf);
  CHECK(c.architecture == "llama");
  CHECK(c.num_layers == 30);
  CHECK(c.hidden_size == 576);
  CHECK(c.intermediate_size == 1536);
  CHECK(c.num_heads == 9);
  CHECK(c.num_kv_heads == 3);
  CHECK(c.head_dim == 64);
  CHECK(c.vocab_size == 49152);
  CHECK(c.context_length == 8192);
  CHECK(c.rope_theta == 100000.0f);
  CHECK(c.rope_layout == RopeLayout::Interleaved);
  CHECK(c.tied_embeddings);
  CHECK_FALSE(c.qkv_bias);
  // 2 (K,V) x 30 layers x 3 KV heads x 64 dims = 11520 elements per token.
  CHECK(c.kv_bytes_per_token(4) == 46080);
  CHECK(c.kv_bytes_per_token(2) == 23040);
}
