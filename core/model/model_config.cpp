#include "model/model_config.h"

#include <simdjson.h>

#include <array>

#include "model/gguf.h"
#include "util/error.h"

namespace pagedgen {

namespace {

// Architectures that share the Llama block (RMSNorm, RoPE, GQA attention, SwiGLU MLP).
constexpr std::array<std::string_view, 3> kGgufArchitectures = {"llama", "qwen2", "mistral"};
constexpr std::array<std::string_view, 3> kHfModelTypes = {"llama", "qwen2", "mistral"};

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::string_view n : names)
    if (n == name) return true;
  return false;
}

int64_t require_int(const GgufFile& gguf, const std::string& key) {
  const std::optional<uint64_t> value = gguf.get_uint(key);
  if (!value) fail("{}: missing metadata key '{}'", gguf.path().string(), key);
  if (*value > static_cast<uint64_t>(INT64_MAX)) fail("{}: '{}' is out of range", gguf.path().string(), key);
  return static_cast<int64_t>(*value);
}

}  // namespace

ModelConfig model_config_from_gguf(const GgufFile& gguf) {
  const std::string where = gguf.path().string();
  const std::optional<std::string> arch = gguf.get_string("general.architecture");
  if (!arch) fail("{}: missing metadata key 'general.architecture'", where);
  if (!contains(kGgufArchitectures, *arch))
    fail("{}: model architecture '{}' is not supported (supported: llama, qwen2, mistral)", where, *arch);

  ModelConfig c;
  c.architecture = *arch;
  c.name = gguf.get_string("general.name").value_or("");
  const std::string p = *arch + ".";
  c.num_layers = require_int(gguf, p + "block_count");
  c.hidden_size = require_int(gguf, p + "embedding_length");
  c.intermediate_size = require_int(gguf, p + "feed_forward_length");
  c.num_heads = require_int(gguf, p + "attention.head_count");
  c.num_kv_heads = gguf.get_uint(p + "attention.head_count_kv").has_value()
                       ? require_int(gguf, p + "attention.head_count_kv")
                       : c.num_heads;
  c.context_length = require_int(gguf, p + "context_length");
  c.head_dim = gguf.get_uint(p + "attention.key_length").has_value()
                   ? require_int(gguf, p + "attention.key_length")
                   : (c.num_heads > 0 ? c.hidden_size / c.num_heads : 0);
  c.rope_dim = gguf.get_uint(p + "rope.dimension_count").has_value()
                   ? require_int(gguf, p + "rope.dimension_count")
                   : c.head_dim;
  if (const auto v = gguf.get_float(p + "rope.freq_base")) c.rope_theta = static_cast<float>(*v);
  if (const auto v = gguf.get_float(p + "attention.layer_norm_rms_epsilon")) c.rms_norm_eps = static_cast<float>(*v);

  if (gguf.get_uint(p + "vocab_size").has_value()) {
    c.vocab_size = require_int(gguf, p + "vocab_size");
  } else if (const GgufValue* tokens = gguf.find("tokenizer.ggml.tokens");
             tokens != nullptr && tokens->type == GgufValueType::ARRAY) {
    c.vocab_size = static_cast<int64_t>(std::get<GgufArray>(tokens->value).items.size());
  } else {
    fail("{}: cannot tell the vocabulary size (no '{}vocab_size' and no tokenizer.ggml.tokens)", where, p);
  }
  // llama.cpp's converter permutes Q/K rows of llama checkpoints so that RoPE rotates
  // adjacent pairs; qwen2 files keep the HF order and rotate the two halves.
  c.rope_layout = (*arch == "qwen2") ? RopeLayout::HalfSplit : RopeLayout::Interleaved;
  c.qkv_bias = gguf.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.tied_embeddings = gguf.find_tensor("output.weight") == nullptr;
  validate_model_config(c, where);
  return c;
}

ModelConfig model_config_from_hf_json(std::string_view config_json, const std::filesystem::path& where) {
  using namespace simdjson;
  const std::string path = where.string();
  padded_string json(config_json);
  dom::parser dom_parser;
  dom::element root;
  if (dom_parser.parse(json).get(root) != SUCCESS || !root.is_object())
    fail("{}: not a JSON object", path);

  auto get_int = [&](const char* key) -> std::optional<int64_t> {
    dom::element e;
    if (root[key].get(e) != SUCCESS || e.is_null()) return std::nullopt;
    int64_t v = 0;
    if (e.get(v) != SUCCESS) fail("{}: '{}' must be an integer", path, key);
    return v;
  };
  auto require = [&](const char* key) {
    const std::optional<int64_t> v = get_int(key);
    if (!v) fail("{}: missing key '{}'", path, key);
    return *v;
  };
  auto get_number = [&](const char* key) -> std::optional<double> {
    dom::element e;
    if (root[key].get(e) != SUCCESS || e.is_null()) return std::nullopt;
    double v = 0;
    if (e.is_int64()) return static_cast<double>(int64_t(e));
    if (e.get(v) != SUCCESS) fail("{}: '{}' must be a number", path, key);
    return v;
  };

  std::string_view model_type;
  if (root["model_type"].get(model_type) != SUCCESS) fail("{}: missing key 'model_type'", path);
  if (!contains(kHfModelTypes, model_type))
    fail("{}: model_type '{}' is not supported (supported: llama, qwen2, mistral)", path, model_type);

  ModelConfig c;
  c.architecture = std::string(model_type);
  c.num_layers = require("num_hidden_layers");
  c.hidden_size = require("hidden_size");
  c.intermediate_size = require("intermediate_size");
  c.num_heads = require("num_attention_heads");
  c.num_kv_heads = get_int("num_key_value_heads").value_or(c.num_heads);
  c.head_dim = get_int("head_dim").value_or(c.num_heads > 0 ? c.hidden_size / c.num_heads : 0);
  c.rope_dim = c.head_dim;
  c.vocab_size = require("vocab_size");
  c.context_length = require("max_position_embeddings");
  // Mistral v0.1 attends over a 4096-token window; pagedgen has full attention only, so it
  // caps the context at the window, where the two agree.
  if (const auto window = get_int("sliding_window"); window && *window > 0 && *window < c.context_length)
    c.context_length = *window;
  c.rms_norm_eps = static_cast<float>(get_number("rms_norm_eps").value_or(1e-6));
  c.rope_theta = static_cast<float>(get_number("rope_theta").value_or(10000.0));
  c.rope_layout = RopeLayout::HalfSplit;
  bool tied = false;
  if (dom::element e; root["tie_word_embeddings"].get(e) == SUCCESS && !e.is_null() && e.get(tied) != SUCCESS)
    fail("{}: 'tie_word_embeddings' must be true or false", path);
  c.tied_embeddings = tied;
  c.qkv_bias = (model_type == "qwen2");
  if (dom::element scaling; root["rope_scaling"].get(scaling) == SUCCESS && !scaling.is_null()) {
    std::string_view type;
    if (scaling["rope_type"].get(type) != SUCCESS && scaling["type"].get(type) != SUCCESS)
      fail("{}: rope_scaling has no 'rope_type'", path);
    if (type != "llama3" && type != "default")
      fail("{}: rope_scaling type '{}' is not supported (supported: llama3)", path, type);
    if (type == "llama3") {
      auto number = [&](const char* key) {
        double v = 0;
        dom::element e;
        if (scaling[key].get(e) != SUCCESS) fail("{}: rope_scaling is missing '{}'", path, key);
        if (e.is_int64()) return static_cast<double>(int64_t(e));
        if (e.get(v) != SUCCESS) fail("{}: rope_scaling '{}' must be a number", path, key);
        return v;
      };
      c.rope_scaling = Llama3RopeScaling{static_cast<float>(number("factor")),
                                         static_cast<float>(number("low_freq_factor")),
                                         static_cast<float>(number("high_freq_factor")),
                                         static_cast<int64_t>(number("original_max_position_embeddings"))};
    }
  }
  validate_model_config(c, path);
  return c;
}

void validate_model_config(const ModelConfig& c, std::string_view where) {
  auto positive = [&](int64_t v, const char* what) {
    if (v <= 0 || v > (int64_t{1} << 31)) fail("{}: {} is {} (must be positive)", where, what, v);
  };
  positive(c.num_layers, "the number of layers");
  positive(c.hidden_size, "the hidden size");
  positive(c.intermediate_size, "the intermediate size");
  positive(c.num_heads, "the number of attention heads");
  positive(c.num_kv_heads, "the number of KV heads");
  positive(c.head_dim, "the head dimension");
  positive(c.vocab_size, "the vocabulary size");
  positive(c.context_length, "the context length");
  if (c.num_heads % c.num_kv_heads != 0)
    fail("{}: {} attention heads are not a multiple of {} KV heads", where, c.num_heads, c.num_kv_heads);
  if (c.head_dim % 2 != 0) fail("{}: head dimension {} is odd; RoPE needs pairs", where, c.head_dim);
  if (c.rope_dim <= 0 || c.rope_dim > c.head_dim || c.rope_dim % 2 != 0)
    fail("{}: RoPE dimension {} does not fit head dimension {}", where, c.rope_dim, c.head_dim);
}

}  // namespace pagedgen
