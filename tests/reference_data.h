// The reference outputs of an independent implementation (llama.cpp) stored by
// scripts/make-reference.py: prompts, their token ids, the logits at the last prompt
// position and 32 greedy tokens. tests/data/reference: the weights dequantized to F32;
// tests/data/reference-q4_1: the Q4_1 file as it is, activations quantized (--quantized).
#pragma once

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace pagedgen::test {

struct ReferencePrompt {
  std::string name;
  std::string text;
  std::vector<TokenId> prompt_ids;
  std::vector<TokenId> greedy_ids;
  std::vector<float> greedy_margins;
  std::vector<float> logits;  // [vocab]
};

// Reads tests/data/<name>; throws when the files are missing or malformed.
std::vector<ReferencePrompt> load_reference_prompts(const std::string& name = "reference");

}  // namespace pagedgen::test
