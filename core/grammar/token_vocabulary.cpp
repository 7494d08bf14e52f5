// Token bytes as the output processor's IncrementalDecoder sees them for generated text.
#include "grammar/token_vocabulary.h"

#include "tokenizer/tokenizer.h"

namespace pagedgen {

TokenVocabulary token_vocabulary(const Tokenizer& tokenizer) {
  TokenVocabulary vocabulary;
  vocabulary.bytes_by_id.resize(static_cast<size_t>(tokenizer.vocab_size()));
  for (TokenId id = 0; id < tokenizer.vocab_size(); ++id) {
    // Control tokens render nothing in generated text (render_special = false), which is
    // what keeps them out of a constrained output.
    vocabulary.bytes_by_id[static_cast<size_t>(id)] = tokenizer.token_bytes(id, false);
  }
  vocabulary.end_of_generation = tokenizer.special().end_of_generation;
  return vocabulary;
}

}  // namespace pagedgen
