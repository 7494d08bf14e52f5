// Fuzz target: an HF config.json text, read as a model config. Error is a refusal; a config
// that is accepted must be one validate_model_config accepts too, with KV sizes that are
// positive (the products of its dimensions never wrap).
#include <cstddef>
#include <cstdint>

#include "fuzz_files.h"
#include "model/model_config.h"
#include "util/error.h"

using namespace pagedgen;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    const ModelConfig config = model_config_from_hf_json(fuzz::as_text(data, size), "config.json");
    validate_model_config(config, "config.json");
    if (config.kv_elements_per_token() <= 0 || config.kv_bytes_per_token(4) == 0) __builtin_trap();
  } catch (const Error&) {
  }
  return 0;
}
