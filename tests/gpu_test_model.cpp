#include "gpu_test_model.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "gguf_writer.h"
#include "loader/model_files.h"
#include "model/dummy_weights.h"
#include "test_paths.h"
#include "util/json_quote.h"

namespace pagedgen::test {

namespace {

// The seed `--load-format dummy` uses, so the host weights match the CLI's.
constexpr uint64_t kDummySeed = 0;

std::filesystem::path dummy_config_path() { return source_dir() / "samples" / "smollm2-135m.config.json"; }

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out.good()) throw std::runtime_error("cannot write " + path.string());
}

// GPT-2's byte-level alphabet: byte b as the UTF-8 of the character that stands for it.
// Printable bytes stand for themselves; the others, in order, for U+0100, U+0101, ...
std::string byte_symbol(int b) {
  const auto printable = [](int c) {
    return (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
  };
  int code = b;
  if (!printable(b)) {
    code = 256;
    for (int c = 0; c < b; ++c) code += printable(c) ? 0 : 1;
  }
  std::string out;
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
  return out;
}

// A byte-level BPE tokenizer.json without merges (text encodes byte by byte) whose
// vocabulary has exactly `vocab_size` ids, so that every id a dummy model samples decodes
// to text: ids 0-255 are the bytes, then pairs of bytes, then three ChatML specials.
std::string dummy_tokenizer_json(int32_t vocab_size) {
  const int32_t first_special = vocab_size - 3;
  std::string vocab;
  for (int32_t id = 0; id < first_special; ++id) {
    const std::string piece =
        id < 256 ? byte_symbol(id) : byte_symbol((id - 256) / 256) + byte_symbol((id - 256) % 256);
    vocab += fmt::format("{}{}: {}", id == 0 ? "" : ", ", json_quote(piece), id);
  }
  std::string added;
  const char* specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  for (int32_t i = 0; i < 3; ++i)
    added += fmt::format(R"({}{{"id": {}, "content": "{}", "single_word": false, "lstrip": false, "rstrip": false, )"
                         R"("normalized": false, "special": true}})",
                         i == 0 ? "" : ", ", first_special + i, specials[i]);
  return fmt::format(R"({{"version": "1.0", "added_tokens": [{}], "normalizer": null,
 "pre_tokenizer": {{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}},
 "post_processor": null,
 "decoder": {{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true}},
 "model": {{"type": "BPE", "dropout": null, "unk_token": null, "ignore_merges": false, "vocab": {{{}}}, "merges": []}}}}
)",
                     added, vocab);
}

// The directory standing in for the default model; removed when the test binary exits.
const std::filesystem::path& dummy_model_dir() {
  static const TempDir dir("pagedgen-gpu-test-model");
  static const bool written = [] {
    const ModelConfig config = dummy_model_config(dummy_config_path());
    std::filesystem::copy_file(dummy_config_path(), dir / "config.json");
    // A safetensors file with no tensors: the weights are dummy, only the files' tokenizer is read.
    write_text(dir / "model.safetensors", std::string("\x02\0\0\0\0\0\0\0{}", 10));
    write_text(dir / "tokenizer.json", dummy_tokenizer_json(config.vocab_size));
    write_text(dir / "tokenizer_config.json",
               R"({"bos_token": null, "eos_token": "<|im_end|>", "add_bos_token": false})");
    std::filesystem::copy_file(data_dir() / "chat_templates" / "smollm2-135m-instruct.jinja",
                               dir / "chat_template.jinja");
    return true;
  }();
  (void)written;
  return dir.path();
}

std::string quoted(const std::filesystem::path& path) { return fmt::format("'{}'", path.string()); }

}  // namespace

std::vector<RawTensor> dummy_raw_tensors(const ModelConfig& config, const ModelWeights& weights) {
  // make_dummy_weights keeps tensor id i's values in storage[i].
  const std::vector<DummyTensor> dummy = dummy_tensors(config);
  if (dummy.size() != weights.storage.size()) throw std::runtime_error("dummy weights out of step with their list");
  std::vector<RawTensor> tensors;
  for (std::size_t id = 0; id < dummy.size(); ++id) {
    const auto* bytes = reinterpret_cast<const std::byte*>(weights.storage[id].get());
    tensors.push_back({dummy[id].name,
                       dummy[id].name,
                       dummy[id].shape,
                       static_cast<uint32_t>(GgmlType::F32),
                       {bytes, dummy[id].num_elements() * sizeof(float)}});
  }
  return tensors;
}

const GpuTestModel& gpu_test_model() {
  static const GpuTestModel model = [] {
    GpuTestModel m;
    if (const std::optional<std::filesystem::path> path = default_model()) {
      m.files = std::make_unique<ModelFiles>(*path);
      m.name = path->string();
      m.config = m.files->config();
      m.weights = m.files->load_weights();
      m.tensors = m.files->tensors();
      return m;
    }
    m.dummy = true;
    m.name = "dummy weights of " + dummy_config_path().string();
    m.config = dummy_model_config(dummy_config_path());
    m.weights = make_dummy_weights(m.config, kDummySeed);
    m.tensors = dummy_raw_tensors(m.config, m.weights);
    return m;
  }();
  return model;
}

std::string gpu_test_model_args() {
  if (const std::optional<std::filesystem::path> path = default_model()) return "-m " + quoted(*path);
  return fmt::format("--load-format dummy -m {0} --tokenizer {0}", quoted(dummy_model_dir()));
}

std::string gpu_test_model_files_args() {
  if (const std::optional<std::filesystem::path> path = default_model()) return "-m " + quoted(*path);
  return "-m " + quoted(dummy_model_dir());
}

}  // namespace pagedgen::test
