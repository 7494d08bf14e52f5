// Fuzz target: a GGUF file. Opens it (header, metadata, tensor directory), reads every
// metadata key through each typed getter, every tensor's bytes, the model config and the
// tokenizer it describes. Any Error is a refusal, which is fine; anything else is a finding.
#include <cstddef>
#include <cstdint>

#include "fuzz_files.h"
#include "model/gguf.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_loader.h"
#include "util/error.h"

using namespace pagedgen;

namespace {

// Each getter either converts or throws Error; both are fine.
template <typename Get>
void try_get(Get get) {
  try {
    get();
  } catch (const Error&) {
  }
}

void read_everything(const GgufFile& gguf) {
  for (const auto& entry : gguf.metadata()) {
    const std::string& key = entry.first;  // clang 14 cannot capture structured bindings
    try_get([&] { return gguf.get_string(key); });
    try_get([&] { return gguf.get_uint(key); });
    try_get([&] { return gguf.get_int(key); });
    try_get([&] { return gguf.get_float(key); });
    try_get([&] { return gguf.get_bool(key); });
    try_get([&] { return gguf.get_string_array(key); });
    try_get([&] { return gguf.get_float_array(key); });
    try_get([&] { return gguf.get_int_array(key); });
  }
  volatile uint8_t sink = 0;
  for (const GgufTensorInfo& tensor : gguf.tensors()) {
    const std::span<const std::byte> data = gguf.tensor_data(tensor);
    if (!data.empty()) sink = sink ^ static_cast<uint8_t>(data.front()) ^ static_cast<uint8_t>(data.back());
  }
  try_get([&] { return model_config_from_gguf(gguf); });
  try {
    const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(gguf);
    const std::vector<TokenId> ids = tokenizer->encode("Hello <s> world 123", true);
    (void)tokenizer->decode(ids, true);
  } catch (const Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    const GgufFile gguf(fuzz::memory_file(fuzz::as_text(data, size)));
    read_everything(gguf);
  } catch (const Error&) {
  }
  return 0;
}
