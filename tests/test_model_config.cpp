// Model configs from HF config.json texts and from the default model's GGUF metadata.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "gguf_writer.h"
#include "model/gguf.h"
#include "model/model_config.h"
#include "model/model_weights.h"
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
      "rope_theta": 1000000.0, "tie_word_embeddings": true, "sliding_window": null})",
                                                     "q/config.json");
  CHECK(qwen.qkv_bias);
  CHECK(qwen.tied_embeddings);
  CHECK(qwen.head_dim == 64);
  CHECK(qwen.context_length == 32768);

  const ModelConfig mistral = model_config_from_hf_json(R"({"model_type": "mistral", "hidden_size": 4096,
      "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
      "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 32768,
      "sliding_window": 4096})",
                                                        "m/config.json");
  CHECK(mistral.context_length == 4096);
}

TEST_CASE("bad HF configs are errors that name the file and the key") {
  CHECK_THROWS_WITH_AS(model_config_from_hf_json(R"({"model_type": "gpt2"})", "x/config.json"),
                       doctest::Contains("model_type 'gpt2' is not supported"), Error);
  CHECK_THROWS_WITH_AS(model_config_from_hf_json(R"({"model_type": "llama", "hidden_size": 64})", "x/config.json"),
                       doctest::Contains("missing key 'num_hidden_layers'"), Error);
  CHECK_THROWS_WITH_AS(model_config_from_hf_json("[1, 2", "x/config.json"), doctest::Contains("x/config.json"), Error);
  CHECK_THROWS_WITH_AS(model_config_from_hf_json(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 3, "num_key_value_heads": 2, "vocab_size": 10,
        "max_position_embeddings": 64})",
                                                 "x/config.json"),
                       doctest::Contains("not a multiple"), Error);
  CHECK_THROWS_WITH_AS(model_config_from_hf_json(
                           R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": "big"})", "x/config.json"),
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

namespace {

// A small Llama config.json with `extra` fields added last (a later key wins in simdjson's
// DOM lookup only when it is the sole one, so callers replace fields by name instead).
std::string hf_config(const std::string& layers = "2", const std::string& hidden = "64",
                      const std::string& extra = "") {
  return fmt::format(R"({{"model_type": "llama", "num_hidden_layers": {}, "hidden_size": {},
      "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 32,
      "max_position_embeddings": 64{}}})",
                     layers, hidden, extra);
}

// A GGUF llama file with the given dimension keys (and a 4-token vocabulary), opened.
struct GgufConfigFile {
  test::TempDir dir{"pagedgen-model-config"};
  std::filesystem::path path = dir / "model.gguf";

  explicit GgufConfigFile(const std::vector<std::pair<std::string, GgufValue>>& changes) {
    test::GgufWriter writer;
    std::vector<std::pair<std::string, GgufValue>> keys = {
        {"general.architecture", {GgufValueType::STRING, std::string("llama")}},
        {"llama.block_count", {GgufValueType::UINT32, uint64_t{2}}},
        {"llama.embedding_length", {GgufValueType::UINT32, uint64_t{64}}},
        {"llama.feed_forward_length", {GgufValueType::UINT32, uint64_t{128}}},
        {"llama.attention.head_count", {GgufValueType::UINT32, uint64_t{4}}},
        {"llama.attention.head_count_kv", {GgufValueType::UINT32, uint64_t{2}}},
        {"llama.context_length", {GgufValueType::UINT32, uint64_t{64}}},
        {"llama.vocab_size", {GgufValueType::UINT32, uint64_t{32}}},
    };
    for (const auto& [key, value] : changes) {
      bool replaced = false;
      for (auto& entry : keys)
        if (entry.first == key) entry.second = value, replaced = true;
      if (!replaced) keys.emplace_back(key, value);
    }
    for (auto& [key, value] : keys) writer.add(key, value);
    test::write_file(path, writer.build().bytes);
  }
  ModelConfig config() const { return model_config_from_gguf(GgufFile(path)); }
};

GgufValue u64(uint64_t v) { return {GgufValueType::UINT64, v}; }
GgufValue f32(double v) { return {GgufValueType::FLOAT32, v}; }

}  // namespace

// 2^31 layers x a 2^31 hidden size passed the old bound (<= 2^31 each), and 2 x layers x
// KV heads x head dim wrapped to 0 bytes per token: `plan` divided by it (SIGFPE) and
// `inspect` printed "0 bytes per token".
TEST_CASE("dimensions past their bounds, or whose KV product is too large, are refused naming the key") {
  const uint64_t big = uint64_t{1} << 31;
  CHECK_THROWS_WITH_AS(model_config_from_hf_json(hf_config("2147483648", "2147483648"), "x/config.json"),
                       "x/config.json: 'num_hidden_layers' is 2147483648, but must be between 1 and 4096; the file "
                       "is corrupt or not a model pagedgen supports",
                       Error);
  CHECK_THROWS_WITH_AS(model_config_from_hf_json(hf_config("2", "2147483648"), "x/config.json"),
                       doctest::Contains("'hidden_size' is 2147483648, but must be between 1 and 262144"), Error);
  CHECK_THROWS_WITH_AS(model_config_from_hf_json(hf_config("2", "64", R"(, "head_dim": 1000000)"), "x/config.json"),
                       doctest::Contains("'head_dim' is 1000000"), Error);
  CHECK_THROWS_WITH_AS(model_config_from_hf_json(hf_config("0"), "x/config.json"),
                       doctest::Contains("'num_hidden_layers' is 0, but must be between 1 and 4096"), Error);
  CHECK_THROWS_WITH_AS(model_config_from_hf_json(hf_config("-3"), "x/config.json"),
                       doctest::Contains("'num_hidden_layers' is -3"), Error);

  CHECK_THROWS_WITH_AS(GgufConfigFile({{"llama.block_count", u64(big)}, {"llama.embedding_length", u64(big)}}).config(),
                       doctest::Contains("metadata key 'llama.block_count' is 2147483648, but must be between 1 and "
                                         "4096"),
                       Error);
  CHECK_THROWS_WITH_AS(GgufConfigFile({{"llama.embedding_length", u64(big)}}).config(),
                       doctest::Contains("metadata key 'llama.embedding_length' is 2147483648"), Error);
  CHECK_THROWS_WITH_AS(GgufConfigFile({{"llama.context_length", u64(uint64_t{1} << 40)}}).config(),
                       doctest::Contains("metadata key 'llama.context_length' is 1099511627776"), Error);
  CHECK_THROWS_WITH_AS(GgufConfigFile({{"llama.vocab_size", u64(0)}}).config(),
                       doctest::Contains("metadata key 'llama.vocab_size' is 0"), Error);

  // Each dimension within its bound, the product past 2^32 elements per token.
  CHECK_THROWS_WITH_AS(GgufConfigFile({{"llama.block_count", u64(4096)},
                                       {"llama.attention.head_count", u64(4096)},
                                       {"llama.attention.head_count_kv", u64(4096)},
                                       {"llama.attention.key_length", u64(4096)},
                                       {"llama.rope.dimension_count", u64(4096)}})
                           .config(),
                       doctest::Contains("the KV cache needs 137438953472 elements per token (2 x 4096 layers x "
                                         "4096 KV heads x 4096 dims)"),
                       Error);
  // The largest dimensions of released models still fit: 126 layers, 128 heads of 128 dims.
  const ModelConfig large = GgufConfigFile({{"llama.block_count", u64(126)},
                                            {"llama.embedding_length", u64(16384)},
                                            {"llama.feed_forward_length", u64(53248)},
                                            {"llama.attention.head_count", u64(128)},
                                            {"llama.attention.head_count_kv", u64(8)},
                                            {"llama.context_length", u64(131072)},
                                            {"llama.vocab_size", u64(128256)}})
                                .config();
  CHECK(large.kv_bytes_per_token(2) == 2 * 126 * 8 * 128 * 2);
}

// RoPE bases and RMSNorm epsilons that make no sense were once taken as given.
TEST_CASE("RoPE theta, RMSNorm epsilon and RoPE scaling values that make no sense name the key and file") {
  for (const char* theta : {"0", "-10000", "1e39"}) {
    CAPTURE(theta);
    CHECK_THROWS_WITH_AS(
        model_config_from_hf_json(hf_config("2", "64", fmt::format(R"(, "rope_theta": {})", theta)), "x/config.json"),
        doctest::Contains(
            fmt::format("x/config.json: 'rope_theta' is {}, but must be a positive finite number", std::stod(theta))
                .c_str()),
        Error);
  }
  for (const char* eps : {"0", "-1e-05", "1", "1e-50"}) {
    CAPTURE(eps);
    CHECK_THROWS_WITH_AS(
        model_config_from_hf_json(hf_config("2", "64", fmt::format(R"(, "rms_norm_eps": {})", eps)), "x/config.json"),
        doctest::Contains("x/config.json: 'rms_norm_eps' is"), Error);
  }
  const auto scaling = [](const std::string& fields) {
    return hf_config("2", "64", R"(, "rope_scaling": {"rope_type": "llama3", )" + fields + "}");
  };
  CHECK_THROWS_WITH_AS(model_config_from_hf_json(scaling(R"("factor": 0, "low_freq_factor": 1, "high_freq_factor": 4,
                                                           "original_max_position_embeddings": 8192)"),
                                                 "x/config.json"),
                       doctest::Contains("'rope_scaling.factor' is 0"), Error);
  CHECK_THROWS_WITH_AS(model_config_from_hf_json(scaling(R"("factor": 8, "low_freq_factor": 4, "high_freq_factor": 4,
                                                           "original_max_position_embeddings": 8192)"),
                                                 "x/config.json"),
                       doctest::Contains("'rope_scaling.high_freq_factor' is 4, but must be greater than"), Error);
  CHECK_THROWS_WITH_AS(model_config_from_hf_json(scaling(R"("factor": 8, "low_freq_factor": 1, "high_freq_factor": 4,
                                                           "original_max_position_embeddings": 1e300)"),
                                                 "x/config.json"),
                       doctest::Contains("'rope_scaling.original_max_position_embeddings' is 1e+300"), Error);

  CHECK_THROWS_WITH_AS(GgufConfigFile({{"llama.rope.freq_base", f32(-1)}}).config(),
                       doctest::Contains("metadata key 'llama.rope.freq_base' is -1, but must be a positive finite "
                                         "number"),
                       Error);
  CHECK_THROWS_WITH_AS(
      GgufConfigFile({{"llama.rope.freq_base", f32(std::numeric_limits<double>::quiet_NaN())}}).config(),
      doctest::Contains("metadata key 'llama.rope.freq_base' is nan"), Error);
  CHECK_THROWS_WITH_AS(GgufConfigFile({{"llama.attention.layer_norm_rms_epsilon", f32(0)}}).config(),
                       doctest::Contains("metadata key 'llama.attention.layer_norm_rms_epsilon' is 0, but must be a "
                                         "positive number below 1"),
                       Error);
  const ModelConfig good =
      GgufConfigFile({{"llama.rope.freq_base", f32(500000)}, {"llama.attention.layer_norm_rms_epsilon", f32(1e-5)}})
          .config();
  CHECK(good.rope_theta == 500000.0f);
  CHECK(good.rms_norm_eps == 1e-5f);
}

namespace {

// A GGUF of architecture `arch` with the dimensions of GgufConfigFile under its prefix,
// plus `extra` keys and tensors.
ModelConfig arch_config(const std::string& arch, const std::vector<std::pair<std::string, GgufValue>>& extra,
                        std::vector<test::GgufTestTensor> tensors = {}) {
  test::TempDir dir("pagedgen-arch-config");
  test::GgufWriter writer;
  writer.add("general.architecture", {GgufValueType::STRING, arch});
  for (const auto& [key, value] : std::vector<std::pair<std::string, uint64_t>>{{"block_count", 3},
                                                                                {"embedding_length", 64},
                                                                                {"feed_forward_length", 128},
                                                                                {"attention.head_count", 4},
                                                                                {"attention.head_count_kv", 2},
                                                                                {"context_length", 64},
                                                                                {"vocab_size", 32}})
    writer.add(arch + "." + key, {GgufValueType::UINT32, value});
  for (const auto& [key, value] : extra) writer.add(arch + "." + key, value);
  for (test::GgufTestTensor& t : tensors) writer.add_tensor(std::move(t));
  test::write_file(dir / "model.gguf", writer.build().bytes);
  return model_config_from_gguf(GgufFile(dir / "model.gguf"));
}

GgufValue bools(std::vector<bool> values) {
  std::vector<GgufValue> items;
  for (bool v : values) items.push_back({GgufValueType::BOOL, v});
  return test::gguf_array(GgufValueType::BOOL, std::move(items));
}

}  // namespace

TEST_CASE("Gemma window layers: the pattern key as booleans or a period, the default, and no window at all") {
  const GgufValue window = {GgufValueType::UINT32, uint64_t{512}};
  const ModelConfig listed = arch_config("gemma3", {{"attention.sliding_window", window},
                                                    {"attention.sliding_window_pattern", bools({false, true, true})}});
  CHECK(listed.sliding_window == 512);
  CHECK(listed.window_layers == std::vector<bool>{false, true, true});
  const ModelConfig period =
      arch_config("gemma3", {{"attention.sliding_window", window}, {"attention.sliding_window_pattern", u64(3)}});
  CHECK(period.window_layers == std::vector<bool>{true, true, false});
  const ModelConfig gemma2 = arch_config("gemma2", {});  // llama.cpp's defaults: 4096, every other layer
  CHECK((gemma2.sliding_window == 4096 && gemma2.window_layers == std::vector<bool>{true, false, true}));
  CHECK((gemma2.attn_logit_softcap == 50.0f && gemma2.final_logit_softcap == 30.0f));
  CHECK_FALSE(arch_config("gemma3", {}).sliding_window.has_value());
  CHECK_THROWS_WITH_AS(arch_config("gemma3", {{"attention.sliding_window", window},
                                              {"attention.sliding_window_pattern", bools({true})}}),
                       doctest::Contains("'gemma3.attention.sliding_window_pattern' must be 3 booleans"), Error);
}

TEST_CASE("linear RoPE scaling slows the full layers' rotations; other scalings and LongRoPE are refused") {
  const ModelConfig linear =
      arch_config("gemma3", {{"attention.sliding_window", u64(8)},
                             {"rope.scaling.type", {GgufValueType::STRING, std::string("linear")}},
                             {"rope.scaling.factor", f32(8.0)}});
  CHECK(linear.rope_linear_factor == 8.0f);
  CHECK(rope_inverse_frequencies(linear, nullptr)[0] == doctest::Approx(1.0 / 8));
  CHECK(window_rope_inverse_frequencies(linear)[0] == 1.0f);  // window layers: unscaled, base 10,000
  CHECK_THROWS_WITH_AS(arch_config("qwen3", {{"rope.scaling.type", {GgufValueType::STRING, std::string("yarn")}},
                                             {"rope.scaling.factor", f32(4.0)}}),
                       doctest::Contains("RoPE scaling 'yarn' (metadata key 'qwen3.rope.scaling.type') is not "
                                         "supported"),
                       Error);
  test::GgufTestTensor factors{"rope_factors_long.weight", {8}, 0, std::vector<std::byte>(32)};
  CHECK_THROWS_WITH_AS(arch_config("phi3", {}, {factors}), doctest::Contains("LongRoPE"), Error);
}
