#include "reference_data.h"

#include <simdjson.h>

#include <fstream>
#include <stdexcept>

#include "test_paths.h"

namespace pagedgen::test {

std::vector<ReferencePrompt> load_reference_prompts(const std::string& name) {
  const auto dir = data_dir() / name;
  simdjson::dom::parser parser;
  simdjson::dom::element manifest = parser.load((dir / "manifest.json").string());
  const auto vocab = static_cast<std::size_t>(int64_t(manifest["vocab_size"]));
  std::string_view logits_name;
  const bool has_logits_file = manifest["logits_file"].get(logits_name) == simdjson::SUCCESS;
  std::ifstream logits_file;
  if (has_logits_file) {
    logits_file.open(dir / std::string(logits_name), std::ios::binary);
    if (!logits_file) throw std::runtime_error("cannot open the reference logits");
  }

  std::vector<ReferencePrompt> prompts;
  for (simdjson::dom::element p : manifest["prompts"].get_array()) {
    ReferencePrompt r;
    r.name = std::string(std::string_view(p["name"]));
    r.text = std::string(std::string_view(p["text"]));
    simdjson::dom::array messages;
    if (p["messages"].get(messages) == simdjson::SUCCESS) {
      r.chat.emplace();
      r.chat->messages_json = simdjson::minify(messages);
    }
    for (int64_t id : p["prompt_ids"].get_array()) r.prompt_ids.push_back(static_cast<TokenId>(id));
    for (int64_t id : p["greedy_ids"].get_array()) r.greedy_ids.push_back(static_cast<TokenId>(id));
    for (double m : p["greedy_margins"].get_array()) r.greedy_margins.push_back(static_cast<float>(m));
    r.greedy_text = std::string(std::string_view(p["greedy_text"]));
    if (has_logits_file) {
      const auto row = static_cast<std::size_t>(int64_t(p["logits_row"]));
      r.logits.resize(vocab);
      logits_file.seekg(static_cast<std::streamoff>(row * vocab * sizeof(float)));
      logits_file.read(reinterpret_cast<char*>(r.logits.data()), static_cast<std::streamsize>(vocab * sizeof(float)));
      if (!logits_file) throw std::runtime_error("reference logits file is too short");
    } else {
      for (simdjson::dom::element pair : p["top_logits"].get_array())
        r.top_logits.emplace_back(static_cast<TokenId>(int64_t(pair.at(0))), static_cast<float>(double(pair.at(1))));
    }
    prompts.push_back(std::move(r));
  }
  return prompts;
}

}  // namespace pagedgen::test
