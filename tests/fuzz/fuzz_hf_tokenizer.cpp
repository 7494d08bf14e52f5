// Fuzz target: the tokenizer files of an HF model directory. The input is up to four parts
// separated by 0x1E: tokenizer.json, tokenizer_config.json, generation_config.json, and
// tokenizer.model (the rest of the input, bytes as they are). Empty parts are left out. The
// tokenizer is loaded, the chat template read, and a text with special tokens encoded and
// decoded.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_files.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_loader.h"
#include "util/error.h"

using namespace pagedgen;

namespace {

constexpr char kSeparator = '\x1e';
constexpr const char* kFileNames[] = {"tokenizer.json", "tokenizer_config.json", "generation_config.json",
                                      "tokenizer.model"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::string_view rest = fuzz::as_text(data, size);
  const std::filesystem::path dir = fuzz::scratch_dir();
  for (std::size_t part = 0; part < std::size(kFileNames); ++part) {
    const bool last = part + 1 == std::size(kFileNames);
    const std::size_t end = last ? rest.size() : std::min(rest.find(kSeparator), rest.size());
    if (end > 0) fuzz::write_bytes(dir / kFileNames[part], rest.substr(0, end));
    rest.remove_prefix(std::min(end + 1, rest.size()));
  }
  try {
    (void)hf_chat_template(dir);
  } catch (const Error&) {
  }
  try {
    const std::unique_ptr<Tokenizer> tokenizer = load_hf_tokenizer(dir);
    for (const bool parse_special : {false, true}) {
      const std::vector<TokenId> ids =
          tokenizer->encode("<s>Hello, world! 12345 <|im_end|>\n\u00e9\u4e2d", parse_special);
      (void)tokenizer->decode(ids, parse_special);
      for (const TokenId id : ids)
        if (id < 0 || id >= tokenizer->vocab_size()) __builtin_trap();  // encode gives ids of the vocabulary
    }
    const std::vector<TokenId> any_ids = {0, 1, tokenizer->vocab_size() - 1, tokenizer->vocab_size(), -1};
    (void)tokenizer->decode(any_ids, true);
    for (const TokenId id : tokenizer->special().end_of_generation) (void)tokenizer->piece(id);
  } catch (const Error&) {
  }
  return 0;
}
