#include "model/model_config.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>

#include "model/gguf.h"
#include "util/error.h"

namespace pagedgen {

namespace {

// Architectures built on the Llama block (RMSNorm, RoPE, GQA attention, gated MLP); the
// ones after "mistral" depart from it as read_architecture_features says.
constexpr std::array<std::string_view, 7> kGgufArchitectures = {"llama", "qwen2",  "mistral", "qwen3",
                                                                "phi3",  "gemma2", "gemma3"};
constexpr std::array<std::string_view, 3> kHfModelTypes = {"llama", "qwen2", "mistral"};

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::string_view n : names)
    if (n == name) return true;
  return false;
}

// Upper bounds on each dimension: far above any released model (the largest have ~130
// layers, hidden sizes near 25,000, 128 heads of up to 256 dims, 262k-token vocabularies
// and 10M-token contexts), and low enough that the products sized from them (KV bytes per
// token and per block, weight element counts) stay far below 2^63 and never wrap to 0.
constexpr int64_t kMaxLayers = int64_t{1} << 12;
constexpr int64_t kMaxHiddenSize = int64_t{1} << 18;
constexpr int64_t kMaxIntermediateSize = int64_t{1} << 20;
constexpr int64_t kMaxHeads = int64_t{1} << 12;
constexpr int64_t kMaxHeadDim = int64_t{1} << 12;
// The sampler's fixed-point weights and sort keys hold ids below 2^19 (sample/sampling_math.h).
constexpr int64_t kMaxVocabSize = int64_t{1} << 19;
constexpr int64_t kMaxContextLength = INT32_MAX;  // positions are 32-bit
// 2 x layers x KV heads x head dim; today's largest models need about 2^20.
constexpr int64_t kMaxKvElementsPerToken = int64_t{1} << 32;

// A dimension as messages name it, and its upper bound.
struct DimensionLimit {
  const char* what;
  int64_t max;
};

[[noreturn]] void fail_out_of_range(std::string_view where, std::string_view key, std::string_view value,
                                    std::string_view allowed) {
  fail("{}: {} is {}, but must be {}; the file is corrupt or not a model pagedgen supports", where, key, value,
       allowed);
}

// An integer key of a dimension: present, and in [1, max].
int64_t require_dimension(const GgufFile& gguf, const std::string& key, int64_t max) {
  const std::string where = gguf.path().string();
  const std::optional<uint64_t> value = gguf.get_uint(key);
  if (!value) fail("{}: missing metadata key '{}'", where, key);
  if (*value == 0 || *value > static_cast<uint64_t>(max))
    fail_out_of_range(where, fmt::format("metadata key '{}'", key), std::to_string(*value),
                      fmt::format("between 1 and {}", max));
  return static_cast<int64_t>(*value);
}

// A positive finite number that converts to a positive finite float, below `below` when
// given (e.g. an epsilon must be < 1).
float positive_float(double value, std::string_view where, std::string_view key,
                     std::optional<double> below = std::nullopt) {
  const bool in_range = std::isfinite(value) && value > 0 && value <= std::numeric_limits<float>::max() &&
                        static_cast<float>(value) > 0 && (!below || value < *below);
  if (!in_range)
    fail_out_of_range(where, key, fmt::format("{}", value),
                      below ? fmt::format("a positive number below {}", *below) : "a positive finite number");
  return static_cast<float>(value);
}

// The layers of a Gemma file that attend through the sliding window. Key
// attention.sliding_window_pattern: a bool per layer, or n (the last layer of every n has
// full attention, n = 0 all window layers), else the architecture's `default_pattern`.
std::vector<bool> window_layers_of(const GgufFile& gguf, const std::string& p, int64_t num_layers,
                                   uint64_t default_pattern) {
  const std::string key = p + "attention.sliding_window_pattern";
  std::vector<bool> layers(static_cast<std::size_t>(num_layers));
  if (const GgufValue* value = gguf.find(key); value != nullptr && value->type == GgufValueType::ARRAY) {
    const GgufArray& items = std::get<GgufArray>(value->value);
    if (items.element_type != GgufValueType::BOOL || std::ssize(items.items) != num_layers)
      fail("{}: metadata key '{}' must be {} booleans (one per layer)", gguf.path().string(), key, num_layers);
    for (std::size_t i = 0; i < layers.size(); ++i) layers[i] = std::get<bool>(items.items[i].value);
    return layers;
  }
  const uint64_t n = gguf.get_uint(key).value_or(default_pattern);
  for (std::size_t i = 0; i < layers.size(); ++i) layers[i] = n == 0 || i % n < n - 1;
  return layers;
}

// What an architecture adds to the Llama block, from its metadata (keys and defaults as
// llama.cpp reads them, so a file means the same model to both).
void read_architecture_features(const GgufFile& gguf, ModelConfig& c) {
  const std::string where = gguf.path().string();
  const std::string p = c.architecture + ".";
  const auto float_key = [&](const std::string& key) -> std::optional<float> {
    const std::optional<double> v = gguf.get_float(p + key);
    if (!v) return std::nullopt;
    return positive_float(*v, where, fmt::format("metadata key '{}{}'", p, key));
  };
  // Linear RoPE scaling (Gemma 3 4B and up); llama.cpp reads a factor without a type as linear.
  const std::string scaling = gguf.get_string(p + "rope.scaling.type").value_or("linear");
  std::optional<float> factor = float_key("rope.scaling.factor");
  if (!factor) factor = float_key("rope.scale_linear");
  if (scaling == "linear" && factor) {
    c.rope_linear_factor = *factor;
  } else if (scaling != "linear" && scaling != "none") {
    fail("{}: RoPE scaling '{}' (metadata key '{}rope.scaling.type') is not supported (supported: linear, none)", where,
         scaling, p);
  }
  // llama.cpp's converter keeps the HF order of Q/K rows for these: RoPE rotates the halves.
  if (c.architecture == "qwen2" || c.architecture == "qwen3" || c.architecture == "phi3" ||
      c.architecture.starts_with("gemma"))
    c.rope_layout = RopeLayout::HalfSplit;
  if (c.architecture == "qwen3") c.qk_norm = true;
  if (c.architecture == "phi3" && (gguf.find_tensor("rope_factors_long.weight") != nullptr ||
                                   gguf.find_tensor("rope_factors_short.weight") != nullptr))
    fail(
        "{}: LongRoPE (rope_factors_long / rope_factors_short tensors, the 128k-context Phi-3 models) is not "
        "supported; the 4k-context Phi-3 models are",
        where);
  // Phi-3's sliding window is ignored, as llama.cpp does (its converter's window metadata is unreliable).
  if (!c.architecture.starts_with("gemma")) return;

  const bool gemma2 = c.architecture == "gemma2";
  c.qk_norm = !gemma2;
  c.post_norms = true;
  c.activation = MlpActivation::kGeluTanh;
  c.embedding_scale = std::sqrt(static_cast<float>(c.hidden_size));
  // The query scale is 1/sqrt(query_pre_attn_scalar), which GGUF files do not store:
  // llama.cpp takes head_dim, except for the 27B models (46 layers in Gemma 2, 62 in
  // Gemma 3), whose query_pre_attn_scalar is hidden / heads. pagedgen does the same.
  const bool is_27b = c.num_layers == (gemma2 ? 46 : 62);
  c.attention_scale = 1.0f / std::sqrt(static_cast<float>(is_27b ? c.hidden_size / c.num_heads : c.head_dim));
  if (gemma2) {
    c.attn_logit_softcap = float_key("attn_logit_softcapping").value_or(50.0f);
    c.final_logit_softcap = float_key("final_logit_softcapping").value_or(30.0f);
  } else {
    c.final_logit_softcap = float_key("final_logit_softcapping");
  }
  const std::string window_key = p + "attention.sliding_window";
  const std::optional<uint64_t> window = gguf.get_uint(window_key);
  if (gemma2 || (window && *window > 0)) {
    c.sliding_window = window ? require_dimension(gguf, window_key, kMaxContextLength) : 4096;
    c.window_layers = window_layers_of(gguf, p, c.num_layers, gemma2 ? 2 : 6);
    c.window_rope_theta = float_key("rope.freq_base_swa").value_or(gemma2 ? c.rope_theta : 10000.0f);
  }
}

// A number from a config.json value, an integer included; `what` names it in the message.
double json_number(simdjson::dom::element e, std::string_view path, std::string_view what) {
  if (e.is_int64()) return static_cast<double>(int64_t(e));
  double v = 0;
  if (e.get(v) != simdjson::SUCCESS) fail("{}: {} must be a number", path, what);
  return v;
}

// The top-level keys of an HF config.json, each read with the file's path in its message.
class HfConfigJson {
 public:
  HfConfigJson(simdjson::dom::element root, std::string_view path) : root_(root), path_(path) {}

  std::optional<int64_t> integer(const char* key) const {
    const auto e = value(key);
    if (!e) return std::nullopt;
    int64_t v = 0;
    if (e->get(v) != simdjson::SUCCESS) fail("{}: '{}' must be an integer", path_, key);
    return v;
  }
  // A dimension: an integer in [1, max].
  std::optional<int64_t> dimension(const char* key, int64_t max) const {
    const std::optional<int64_t> v = integer(key);
    if (v && (*v <= 0 || *v > max))
      fail_out_of_range(path_, fmt::format("'{}'", key), std::to_string(*v), fmt::format("between 1 and {}", max));
    return v;
  }
  int64_t required_dimension(const char* key, int64_t max) const {
    const std::optional<int64_t> v = dimension(key, max);
    if (!v) fail("{}: missing key '{}'", path_, key);
    return *v;
  }
  std::optional<double> number(const char* key) const {
    const auto e = value(key);
    if (!e) return std::nullopt;
    return json_number(*e, path_, fmt::format("'{}'", key));
  }
  // A boolean, false where absent.
  bool flag(const char* key) const {
    const auto e = value(key);
    bool v = false;
    if (e && e->get(v) != simdjson::SUCCESS) fail("{}: '{}' must be true or false", path_, key);
    return v;
  }

 private:
  // The key's value; nullopt where it is absent or null.
  std::optional<simdjson::dom::element> value(const char* key) const {
    simdjson::dom::element e;
    if (root_[key].get(e) != simdjson::SUCCESS || e.is_null()) return std::nullopt;
    return e;
  }

  simdjson::dom::element root_;
  std::string_view path_;
};

// config.json's rope_scaling object: Llama 3's frequency scaling, or none for "default".
std::optional<Llama3RopeScaling> read_rope_scaling(simdjson::dom::element scaling, std::string_view path) {
  std::string_view type;
  if (scaling["rope_type"].get(type) != simdjson::SUCCESS && scaling["type"].get(type) != simdjson::SUCCESS)
    fail("{}: rope_scaling has no 'rope_type'", path);
  if (type == "default") return std::nullopt;
  if (type != "llama3") fail("{}: rope_scaling type '{}' is not supported (supported: llama3)", path, type);
  const auto number = [&](const char* key) {
    simdjson::dom::element e;
    if (scaling[key].get(e) != simdjson::SUCCESS) fail("{}: rope_scaling is missing '{}'", path, key);
    return json_number(e, path, fmt::format("rope_scaling '{}'", key));
  };
  const auto key = [](const char* name) { return fmt::format("'rope_scaling.{}'", name); };
  const float factor = positive_float(number("factor"), path, key("factor"));
  const float low_freq_factor = positive_float(number("low_freq_factor"), path, key("low_freq_factor"));
  const float high_freq_factor = positive_float(number("high_freq_factor"), path, key("high_freq_factor"));
  // The band between the two wavelengths is interpolated over high - low: it must not be empty.
  if (!(high_freq_factor > low_freq_factor))
    fail_out_of_range(path, key("high_freq_factor"), fmt::format("{}", high_freq_factor),
                      fmt::format("greater than 'rope_scaling.low_freq_factor' ({})", low_freq_factor));
  const double original = number("original_max_position_embeddings");
  if (!(original >= 1 && original <= static_cast<double>(kMaxContextLength)) || original != std::floor(original))
    fail_out_of_range(path, key("original_max_position_embeddings"), fmt::format("{}", original),
                      fmt::format("an integer between 1 and {}", kMaxContextLength));
  return Llama3RopeScaling{factor, low_freq_factor, high_freq_factor, static_cast<int64_t>(original)};
}

}  // namespace

std::vector<KvKind> ModelConfig::kv_kinds() const {
  const auto num_window = static_cast<int32_t>(std::ranges::count(window_layers, true));
  const auto num_layers32 = static_cast<int32_t>(num_layers);
  if (!sliding_window || num_window == 0 || num_window == num_layers32)
    return {KvKind{.window = 0, .num_layers = num_layers32}};
  return {KvKind{.window = 0, .num_layers = num_layers32 - num_window},
          KvKind{.window = static_cast<int32_t>(*sliding_window), .num_layers = num_window}};
}

float ModelConfig::softmax_scale() const {
  return attention_scale.value_or(1.0f / std::sqrt(static_cast<float>(head_dim)));
}

ModelConfig model_config_from_gguf(const GgufFile& gguf) {
  const std::string where = gguf.path().string();
  const std::optional<std::string> arch = gguf.get_string("general.architecture");
  if (!arch) fail("{}: missing metadata key 'general.architecture'", where);
  if (!contains(kGgufArchitectures, *arch))
    fail(
        "{}: model architecture '{}' is not supported (supported: llama, qwen2, mistral, qwen3, phi3, gemma2, "
        "gemma3)",
        where, *arch);

  ModelConfig c;
  c.architecture = *arch;
  c.name = gguf.get_string("general.name").value_or("");
  const std::string p = *arch + ".";
  c.num_layers = require_dimension(gguf, p + "block_count", kMaxLayers);
  c.hidden_size = require_dimension(gguf, p + "embedding_length", kMaxHiddenSize);
  c.intermediate_size = require_dimension(gguf, p + "feed_forward_length", kMaxIntermediateSize);
  c.num_heads = require_dimension(gguf, p + "attention.head_count", kMaxHeads);
  c.num_kv_heads = gguf.get_uint(p + "attention.head_count_kv").has_value()
                       ? require_dimension(gguf, p + "attention.head_count_kv", kMaxHeads)
                       : c.num_heads;
  c.context_length = require_dimension(gguf, p + "context_length", kMaxContextLength);
  c.head_dim = gguf.get_uint(p + "attention.key_length").has_value()
                   ? require_dimension(gguf, p + "attention.key_length", kMaxHeadDim)
                   : c.hidden_size / c.num_heads;
  c.rope_dim = gguf.get_uint(p + "rope.dimension_count").has_value()
                   ? require_dimension(gguf, p + "rope.dimension_count", kMaxHeadDim)
                   : c.head_dim;
  const auto float_key = [&](const std::string& key) { return fmt::format("metadata key '{}'", key); };
  if (const auto v = gguf.get_float(p + "rope.freq_base"))
    c.rope_theta = positive_float(*v, where, float_key(p + "rope.freq_base"));
  if (const auto v = gguf.get_float(p + "attention.layer_norm_rms_epsilon"))
    c.rms_norm_eps = positive_float(*v, where, float_key(p + "attention.layer_norm_rms_epsilon"), 1.0);

  if (gguf.get_uint(p + "vocab_size").has_value()) {
    c.vocab_size = require_dimension(gguf, p + "vocab_size", kMaxVocabSize);
  } else if (const GgufValue* tokens = gguf.find("tokenizer.ggml.tokens");
             tokens != nullptr && tokens->type == GgufValueType::ARRAY) {
    c.vocab_size = static_cast<int64_t>(std::get<GgufArray>(tokens->value).items.size());
  } else {
    fail("{}: cannot tell the vocabulary size (no '{}vocab_size' and no tokenizer.ggml.tokens)", where, p);
  }
  // llama.cpp's converter permutes Q/K rows of llama checkpoints so that RoPE rotates
  // adjacent pairs (read_architecture_features names the others).
  c.rope_layout = RopeLayout::Interleaved;
  c.qkv_bias = gguf.find_tensor("blk.0.attn_q.bias") != nullptr;
  // Gemma 2's output head is always the embedding table (llama.cpp ignores an output tensor).
  c.tied_embeddings = gguf.find_tensor("output.weight") == nullptr || *arch == "gemma2";
  read_architecture_features(gguf, c);
  validate_model_config(c, where);
  return c;
}

ModelConfig model_config_from_hf_json(std::string_view config_json, const std::filesystem::path& where) {
  const std::string path = where.string();
  simdjson::padded_string json(config_json);
  simdjson::dom::parser dom_parser;
  simdjson::dom::element root;
  if (dom_parser.parse(json).get(root) != simdjson::SUCCESS || !root.is_object()) fail("{}: not a JSON object", path);
  const HfConfigJson config(root, path);

  std::string_view model_type;
  if (root["model_type"].get(model_type) != simdjson::SUCCESS) fail("{}: missing key 'model_type'", path);
  if (!contains(kHfModelTypes, model_type))
    fail("{}: model_type '{}' is not supported (supported: llama, qwen2, mistral)", path, model_type);

  ModelConfig c;
  c.architecture = std::string(model_type);
  c.num_layers = config.required_dimension("num_hidden_layers", kMaxLayers);
  c.hidden_size = config.required_dimension("hidden_size", kMaxHiddenSize);
  c.intermediate_size = config.required_dimension("intermediate_size", kMaxIntermediateSize);
  c.num_heads = config.required_dimension("num_attention_heads", kMaxHeads);
  c.num_kv_heads = config.dimension("num_key_value_heads", kMaxHeads).value_or(c.num_heads);
  c.head_dim = config.dimension("head_dim", kMaxHeadDim).value_or(c.hidden_size / c.num_heads);
  c.rope_dim = c.head_dim;
  c.vocab_size = config.required_dimension("vocab_size", kMaxVocabSize);
  c.context_length = config.required_dimension("max_position_embeddings", kMaxContextLength);
  // Mistral v0.1 attends over a 4096-token window; pagedgen has full attention only, so it
  // caps the context at the window, where the two agree.
  if (const auto window = config.integer("sliding_window"); window && *window > 0 && *window < c.context_length)
    c.context_length = *window;
  c.rms_norm_eps = positive_float(config.number("rms_norm_eps").value_or(1e-6), path, "'rms_norm_eps'", 1.0);
  c.rope_theta = positive_float(config.number("rope_theta").value_or(10000.0), path, "'rope_theta'");
  c.rope_layout = RopeLayout::HalfSplit;
  c.tied_embeddings = config.flag("tie_word_embeddings");
  c.qkv_bias = (model_type == "qwen2");
  if (simdjson::dom::element scaling; root["rope_scaling"].get(scaling) == simdjson::SUCCESS && !scaling.is_null())
    c.rope_scaling = read_rope_scaling(scaling, path);
  validate_model_config(c, path);
  return c;
}

void validate_model_config(const ModelConfig& c, std::string_view where) {
  const auto in_range = [&](int64_t v, DimensionLimit limit) {
    if (v <= 0 || v > limit.max)
      fail_out_of_range(where, limit.what, std::to_string(v), fmt::format("between 1 and {}", limit.max));
  };
  in_range(c.num_layers, {"the number of layers", kMaxLayers});
  in_range(c.hidden_size, {"the hidden size", kMaxHiddenSize});
  in_range(c.intermediate_size, {"the intermediate size", kMaxIntermediateSize});
  in_range(c.num_heads, {"the number of attention heads", kMaxHeads});
  in_range(c.num_kv_heads, {"the number of KV heads", kMaxHeads});
  in_range(c.head_dim, {"the head dimension", kMaxHeadDim});
  in_range(c.vocab_size, {"the vocabulary size", kMaxVocabSize});
  in_range(c.context_length, {"the context length", kMaxContextLength});
  // Each factor is bounded above, so this product cannot overflow; it is bounded in turn so
  // that KV bytes per block (times element size and block size) stay far from 2^63.
  const int64_t kv_elements = 2 * c.num_layers * c.num_kv_heads * c.head_dim;
  if (kv_elements > kMaxKvElementsPerToken)
    fail(
        "{}: the KV cache needs {} elements per token (2 x {} layers x {} KV heads x {} dims), more than the {} "
        "pagedgen supports; the file is corrupt or not a model pagedgen supports",
        where, kv_elements, c.num_layers, c.num_kv_heads, c.head_dim, kMaxKvElementsPerToken);
  if (!std::isfinite(c.rope_theta) || c.rope_theta <= 0)
    fail_out_of_range(where, "the RoPE base (theta)", fmt::format("{}", c.rope_theta), "a positive finite number");
  if (!std::isfinite(c.rms_norm_eps) || c.rms_norm_eps <= 0 || c.rms_norm_eps >= 1)
    fail_out_of_range(where, "the RMSNorm epsilon", fmt::format("{}", c.rms_norm_eps), "a positive number below 1");
  if (c.num_heads % c.num_kv_heads != 0)
    fail("{}: {} attention heads are not a multiple of {} KV heads", where, c.num_heads, c.num_kv_heads);
  if (c.head_dim % 2 != 0) fail("{}: head dimension {} is odd; RoPE needs pairs", where, c.head_dim);
  if (c.rope_dim <= 0 || c.rope_dim > c.head_dim || c.rope_dim % 2 != 0)
    fail("{}: RoPE dimension {} does not fit head dimension {}", where, c.rope_dim, c.head_dim);
  if (c.sliding_window.has_value() && std::ssize(c.window_layers) != c.num_layers)
    fail("{}: the sliding-window layer pattern has {} entries for {} layers", where, c.window_layers.size(),
         c.num_layers);
}

}  // namespace pagedgen
