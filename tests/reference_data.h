// The reference outputs of an independent implementation (llama.cpp, F32) stored in
// tests/data/reference by scripts/make-reference.py: prompts, their token ids, the logits
// at the last prompt position and 32 greedy tokens.
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

// Reads tests/data/reference; throws when the files are missing or malformed.
std::vector<ReferencePrompt> load_reference_prompts();

}  // namespace pagedgen::test
