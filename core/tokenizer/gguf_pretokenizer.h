// What a GGUF tokenizer.ggml.pre value means for a byte-level BPE ("gpt2") vocabulary:
// the ordered split patterns of that family's tokenizer.json, and the two merge/BOS
// defaults llama.cpp ties to the name. Names and defaults follow llama.cpp's converter
// (convert_hf_to_gguf.py) and loader (llama-vocab.cpp).
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/pretokenizer.h"

namespace pagedgen {

struct GgufBpePreset {
  std::vector<SplitRule> rules;
  bool ignore_merges = false;  // a word that is itself a token is taken whole (Llama 3)
  bool add_bos = false;        // default when tokenizer.ggml.add_bos_token is absent
};

// Throws Error naming `source` (the model file), `pre` and the supported values when `pre`
// is not one we know.
GgufBpePreset gguf_bpe_preset(std::string_view pre, std::string_view source);

// Every tokenizer.ggml.pre value gguf_bpe_preset accepts, in table order.
std::vector<std::string_view> supported_gguf_pre_names();

}  // namespace pagedgen
