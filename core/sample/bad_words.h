// bad_words, as vLLM applies them: each word is tokenized as written (leading whitespace
// removed) and, where a leading space gives a first token of its own and as many tokens,
// once more with that space, so the word is banned at the start of the text and after a
// space. A word of several tokens is banned one token at a time: its last token is masked
// at a step where the generated tokens end with its other tokens.
//
//   bad word "big cat" -> [big][ cat] and [ big][ cat]
//   generated [..., " big"]   -> " cat" masked at this step
//   generated [..., " dog"]   -> nothing masked ("big" and " big" are not masked either)
//
// Only the generated tokens count (a prompt ending in " big" does not ban " cat" at the
// first step), and a word written by other tokens ("bi" + "g cat") is not caught: the
// masks follow token ids, not text.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "step/ids.h"
#include "tokenizer/tokenizer.h"

namespace pagedgen {

// The token sequences of `words` with `tokenizer` (special-token text is matched, as
// vLLM's encode does). Throws Error naming a word that gives no token.
std::vector<std::vector<TokenId>> tokenize_bad_words(std::span<const std::string> words, const Tokenizer& tokenizer);

// Appends to `banned` the last token of each sequence of `bad_words_ids` whose other tokens
// end `generated` (a one-token sequence: always), unsorted, maybe repeated.
void append_banned_tokens(std::span<const std::vector<TokenId>> bad_words_ids, std::span<const TokenId> generated,
                          std::vector<TokenId>& banned);

}  // namespace pagedgen
