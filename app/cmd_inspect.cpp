// `pagedgen inspect`: what a model file holds and what its KV cache will cost.
#include <fmt/ranges.h>
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <memory>

#include "command_help.h"
#include "commands.h"
#include "exit_codes.h"
#include "model/device_weight_layout.h"
#include "model/gguf.h"
#include "loader/model_files.h"
#include "model_option.h"
#include "jinja/template.h"
#include "tokenizer/tokenizer.h"
#include "util/byte_units.h"

namespace pagedgen::app {

namespace {

struct InspectOptions {
  std::string model;
  bool list_tensors = false;
};

std::string special_token_text(const Tokenizer& tokenizer, std::optional<TokenId> id) {
  if (!id) return "none";
  return fmt::format("{} {}", *id, tokenizer.piece(*id));
}

std::uint64_t tensor_bytes(const RawTensor& t) { return t.data.size(); }

// The file's format and the architecture's dimensions and flags.
void print_architecture(const ModelFiles& files) {
  const ModelConfig& c = files.config();
  std::string format = "HF safetensors directory";
  if (const GgufFile* gguf = files.gguf()) format = fmt::format("GGUF v{}", gguf->version());
  fmt::print("model          {} ({})\n", files.path().string(), format);
  if (!c.name.empty()) fmt::print("name           {}\n", c.name);
  fmt::print("architecture   {}\n", c.architecture);
  fmt::print("layers         {}\n", c.num_layers);
  fmt::print("hidden size    {}\n", c.hidden_size);
  fmt::print("ffn size       {}\n", c.intermediate_size);
  fmt::print("heads          {} (head dim {})\n", c.num_heads, c.head_dim);
  fmt::print("KV heads       {} (GQA group of {})\n", c.num_kv_heads, c.num_heads / c.num_kv_heads);
  fmt::print("context        {} tokens\n", c.context_length);
  fmt::print("RoPE           theta {}, {} of {} dims, {} pairs{}\n", c.rope_theta, c.rope_dim, c.head_dim,
             c.rope_layout == RopeLayout::Interleaved ? "interleaved" : "half-split",
             c.rope_scaling ? fmt::format(", llama3 scaling x{}", c.rope_scaling->factor) : "");
  fmt::print("RMSNorm eps    {}\n", c.rms_norm_eps);
  fmt::print("output head    {}\n", c.tied_embeddings ? "tied to the token embeddings" : "separate");
  fmt::print("QKV bias       {}\n", c.qkv_bias ? "yes" : "no");
  if (c.rope_linear_factor != 1.0f)
    fmt::print("RoPE scaling   linear x{} (full-attention layers)\n", c.rope_linear_factor);
}

// What the architecture adds to the Llama block, and its sliding-window layers.
void print_block_extras(const ModelConfig& c) {
  std::vector<std::string> extras;
  if (c.qk_norm) extras.push_back("q/k norms");
  if (c.post_norms) extras.push_back("post-attention and post-MLP norms");
  if (c.activation == MlpActivation::kGeluTanh) extras.push_back("GeGLU (tanh GELU)");
  if (c.embedding_scale != 1.0f) extras.push_back(fmt::format("embeddings x {:.4g}", c.embedding_scale));
  if (c.attention_scale) extras.push_back(fmt::format("softmax scale {:.4g}", *c.attention_scale));
  if (c.attn_logit_softcap) extras.push_back(fmt::format("attention soft-cap {}", *c.attn_logit_softcap));
  if (c.final_logit_softcap) extras.push_back(fmt::format("final soft-cap {}", *c.final_logit_softcap));
  if (!extras.empty()) fmt::print("block extras   {}\n", fmt::join(extras, ", "));
  if (c.sliding_window) {
    const auto num_window = std::ranges::count(c.window_layers, true);
    fmt::print("sliding window {} positions on {} of {} layers (RoPE theta {} there)\n", *c.sliding_window, num_window,
               c.num_layers, c.window_rope_theta);
  }
}

// The tensors' count, parameters and bytes per type; every tensor with `list_tensors`.
void print_tensors(const ModelFiles& files, bool list_tensors) {
  std::map<std::string, std::pair<int, std::uint64_t>> by_type;  // type -> (count, bytes)
  std::uint64_t total_bytes = 0;
  std::uint64_t total_elements = 0;
  for (const RawTensor& t : files.tensors()) {
    auto& entry = by_type[ggml_type_name(t.raw_type)];
    ++entry.first;
    entry.second += tensor_bytes(t);
    total_bytes += tensor_bytes(t);
    std::uint64_t n = 1;
    for (auto d : t.shape) n *= d;
    total_elements += n;
  }
  fmt::print("tensors        {} holding {} parameters in {}\n", files.tensors().size(), total_elements,
             format_bytes(total_bytes));
  for (const auto& [type, entry] : by_type)
    fmt::print("  {:<6} {:>4} tensors  {:>10}\n", type, entry.first, format_bytes(entry.second));
  if (list_tensors) {
    for (const RawTensor& t : files.tensors())
      fmt::print("  {:<32} {:<6} {:<14} {:>10}\n", t.name, ggml_type_name(t.raw_type), fmt::join(t.shape, "x"),
                 format_bytes(tensor_bytes(t)));
  }
}

// The vocabulary, the tokenizer a GGUF names, and the special tokens.
void print_vocabulary(const ModelFiles& files) {
  const Tokenizer& tokenizer = files.tokenizer();
  const SpecialTokens& s = tokenizer.special();
  fmt::print("vocabulary     {} tokens\n", tokenizer.vocab_size());
  if (const GgufFile* gguf = files.gguf())
    fmt::print("tokenizer      {} (pre-tokenizer {})\n", gguf->get_string("tokenizer.ggml.model").value_or("?"),
               gguf->get_string("tokenizer.ggml.pre").value_or("default"));
  fmt::print("special tokens BOS {}, EOS {}, EOT {}, add BOS: {}\n", special_token_text(tokenizer, s.bos),
             special_token_text(tokenizer, s.eos), special_token_text(tokenizer, s.eot), s.add_bos ? "yes" : "no");
}

// The chat template the model carries: its size, and whether it parses.
void print_chat_template(const ModelFiles& files) {
  const auto& template_text = files.chat_template_text();
  if (!template_text) {
    fmt::print("chat template  none in the model (use --chat-template FILE or NAME for chat input)\n");
    return;
  }
  try {
    (void)jinja::Template::parse(*template_text);
    fmt::print("chat template  {} bytes of Jinja (see a rendered prompt with `pagedgen render`)\n",
               template_text->size());
  } catch (const jinja::TemplateError& error) {
    fmt::print("chat template  {} bytes that do not parse ({}); chat input needs --chat-template\n",
               template_text->size(), error.what());
  }
}

// What the CUDA backend allocates for the weights, whatever the file's types: every
// matrix in --dtype, norms and biases in float32, groups 256-byte aligned.
void print_gpu_weights(const ModelConfig& c) {
  fmt::print("GPU weights    as the CUDA backend lays them out (matrices in --dtype, norms and biases float32)\n");
  fmt::print("  {:>10}  {:>14}  {:>10}\n", "--dtype", "bytes", "");
  for (const WeightDtype dtype : {WeightDtype::kBFloat16, WeightDtype::kFloat16, WeightDtype::kFloat32}) {
    const DeviceWeightLayout layout(c, dtype);
    fmt::print("  {:>10}  {:>14}  {:>10}\n", weight_dtype_name(dtype), layout.bytes(), format_bytes(layout.bytes()));
  }
}

// The KV cache's bytes per token, and per block for the usual block sizes.
void print_kv_cache(const ModelConfig& c) {
  fmt::print("KV cache       {} bytes per token in fp32, {} in fp16/bf16 (2 x {} layers x {} KV heads x {} dims)\n",
             c.kv_bytes_per_token(4), c.kv_bytes_per_token(2), c.num_layers, c.num_kv_heads, c.head_dim);
  fmt::print("  {:>10}  {:>16}  {:>16}\n", "block size", "fp32 bytes/block", "fp16 bytes/block");
  for (std::size_t block_size : {8, 16, 32, 64})
    fmt::print("  {:>10}  {:>16}  {:>16}\n", block_size, block_size * c.kv_bytes_per_token(4),
               block_size * c.kv_bytes_per_token(2));
}

int run_inspect(const InspectOptions& options) {
  const ModelFiles files(resolve_model_path(options.model));
  print_architecture(files);
  print_block_extras(files.config());
  print_tensors(files, options.list_tensors);
  print_vocabulary(files);
  print_chat_template(files);
  print_gpu_weights(files.config());
  print_kv_cache(files.config());
  return kExitOk;
}

}  // namespace

void add_inspect_command(CLI::App& app, CommandRunner& selected) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* cmd = add_command(
      app, "inspect", "Show a model's architecture, tensors, vocabulary and chat template.",
      "Prints the architecture and dimensions, tensor types and sizes (--tensors lists every tensor), the "
      "vocabulary and special tokens, the chat template, the GPU memory the weights take per --dtype, and the KV "
      "cache cost per token and per block.");
  add_model_option(*cmd, options->model);
  cmd->add_flag("--tensors", options->list_tensors, "List every tensor with its type, shape and size");
  cmd->parse_complete_callback([&selected, options] { selected = [options] { return run_inspect(*options); }; });
}

}  // namespace pagedgen::app
