// The reference outputs of an independent implementation (llama.cpp) stored by
// scripts/make-reference.py: prompts, their token ids, the logits at the last prompt
// position and 32 greedy tokens. tests/data/reference: the weights dequantized to F32;
// tests/data/reference-q4_1: the Q4_1 file as it is, activations quantized (--quantized);
// reference-gemma3 and reference-gemma3-q4_k_m: the same for Gemma 3 270M (--model gemma3).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace pagedgen::test {

struct ReferencePrompt {
  std::string name;
  std::string text;                 // a chat: `messages` rendered by the model's template
  std::optional<ChatRequest> chat;  // the `messages` as a request line gives them; none for a plain prompt
  std::vector<TokenId> prompt_ids;
  std::vector<TokenId> greedy_ids;
  std::vector<float> greedy_margins;
  std::string greedy_text;    // llama.cpp's detokenization of greedy_ids
  std::vector<float> logits;  // [vocab], where the manifest names a logits file
  // Otherwise (a 262k vocabulary): the largest logits at that position, best first.
  std::vector<std::pair<TokenId, float>> top_logits;
};

// Reads tests/data/<name>; throws when the files are missing or malformed.
std::vector<ReferencePrompt> load_reference_prompts(const std::string& name = "reference");

}  // namespace pagedgen::test
