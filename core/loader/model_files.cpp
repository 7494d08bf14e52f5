#include "loader/model_files.h"

#include <fstream>
#include <regex>
#include <sstream>

#include "model/gguf.h"
#include "model/safetensors.h"
#include "util/error.h"

namespace pagedgen {

namespace {

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read '{}'", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// HF checkpoint names -> the GGUF names pagedgen uses everywhere.
std::optional<std::string> canonical_hf_name(const std::string& name) {
  if (name == "model.embed_tokens.weight") return "token_embd.weight";
  if (name == "model.norm.weight") return "output_norm.weight";
  if (name == "lm_head.weight") return "output.weight";
  static const std::regex layer_re(R"(model\.layers\.(\d+)\.(.+)\.(weight|bias))");
  std::smatch m;
  if (!std::regex_match(name, m, layer_re)) return std::nullopt;
  static const std::pair<const char*, const char*> parts[] = {
      {"input_layernorm", "attn_norm"}, {"self_attn.q_proj", "attn_q"},      {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"},   {"self_attn.o_proj", "attn_output"}, {"post_attention_layernorm", "ffn_norm"},
      {"mlp.gate_proj", "ffn_gate"},    {"mlp.up_proj", "ffn_up"},           {"mlp.down_proj", "ffn_down"},
  };
  for (const auto& [hf, gguf] : parts)
    if (m[2] == hf) return fmt::format("blk.{}.{}.{}", m[1].str(), gguf, m[3].str());
  return std::nullopt;
}

std::optional<GgmlType> ggml_type_of_dtype(std::string_view dtype) {
  if (dtype == "F32") return GgmlType::F32;
  if (dtype == "F16") return GgmlType::F16;
  if (dtype == "BF16") return GgmlType::BF16;
  return std::nullopt;
}

}  // namespace

ModelFiles::ModelFiles(const std::filesystem::path& path) : path_(path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    format_ = ModelFormat::HfSafetensors;
    const std::filesystem::path config_path = path / "config.json";
    if (!std::filesystem::exists(config_path, ec))
      fail("'{}' is a directory without config.json; give a .gguf file or an HF model directory", path.string());
    config_ = model_config_from_hf_json(read_text_file(config_path), config_path);
    safetensors_ = std::make_unique<SafetensorsModel>(path);
    for (const SafetensorsTensor& t : safetensors_->tensors()) {
      const std::optional<std::string> canonical = canonical_hf_name(t.name);
      if (!canonical) continue;
      const std::optional<GgmlType> type = ggml_type_of_dtype(t.dtype);
      if (!type)
        fail("{}: tensor '{}' has dtype {}, which pagedgen cannot load (supported: F32, F16, BF16)", path.string(),
             t.name, t.dtype);
      tensors_.push_back({*canonical, t.name, t.shape, static_cast<uint32_t>(*type), t.data});
    }
    if (find_tensor("output.weight") == nullptr) config_.tied_embeddings = true;
    vocabulary_ = std::make_unique<ModelVocabulary>(path);
    return;
  }
  format_ = ModelFormat::Gguf;
  gguf_ = std::make_unique<GgufFile>(path);
  config_ = model_config_from_gguf(*gguf_);
  for (const GgufTensorInfo& t : gguf_->tensors()) {
    std::vector<uint64_t> shape(t.dims.rbegin(), t.dims.rend());
    tensors_.push_back({t.name, t.name, std::move(shape), t.raw_type, gguf_->tensor_data(t)});
  }
  vocabulary_ = std::make_unique<ModelVocabulary>(*gguf_);
}

ModelFiles::~ModelFiles() = default;
ModelFiles::ModelFiles(ModelFiles&&) noexcept = default;
ModelFiles& ModelFiles::operator=(ModelFiles&&) noexcept = default;

const RawTensor* ModelFiles::find_tensor(std::string_view canonical_name) const {
  for (const RawTensor& t : tensors_)
    if (t.name == canonical_name) return &t;
  return nullptr;
}

ModelWeights ModelFiles::load_weights(WeightForm form, const StopToken& stop) const {
  return load_model_weights(config_, tensors_, path_.string(), form, stop);
}

}  // namespace pagedgen
