// What the grammar engine needs from a tokenizer: the exact bytes each token id adds to
// the generated text (byte-fallback tokens as their one byte, SentencePiece's "▁" as a
// space, partial UTF-8 as it is), and the ids that end a generation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "step/ids.h"

namespace pagedgen {

class Tokenizer;

struct TokenVocabulary {
  // [vocab_size] the bytes each id writes while generating (no leading space dropped:
  // generated text continues a prompt). Empty: the token writes no text (control, unused
  // and unknown tokens) and is never allowed by a grammar.
  std::vector<std::string> bytes_by_id;
  // Allowed once the value is complete, and only then.
  std::vector<TokenId> end_of_generation;

  int32_t size() const { return static_cast<int32_t>(bytes_by_id.size()); }
};

TokenVocabulary token_vocabulary(const Tokenizer& tokenizer);

}  // namespace pagedgen
