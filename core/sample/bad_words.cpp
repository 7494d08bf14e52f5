#include "sample/bad_words.h"

#include <algorithm>
#include <string_view>

#include "util/error.h"

namespace pagedgen {

std::vector<std::vector<TokenId>> tokenize_bad_words(std::span<const std::string> words, const Tokenizer& tokenizer) {
  std::vector<std::vector<TokenId>> sequences;
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string_view word = words[i];
    word.remove_prefix(std::min(word.find_first_not_of(" \t\n\r\f\v"), word.size()));
    std::vector<TokenId> plain = tokenizer.encode(word, true);
    if (plain.empty()) fail("bad_words[{}] gives no token (\"{}\"); remove it", i, words[i]);
    // With a space the word may start with a token of its own (" cat" beside "cat"); when
    // the space merges differently (another number of tokens), vLLM leaves that form out.
    std::vector<TokenId> spaced = tokenizer.encode(" " + std::string(word), true);
    const bool spaced_differs = !spaced.empty() && spaced.front() != plain.front() && spaced.size() == plain.size();
    sequences.push_back(std::move(plain));
    if (spaced_differs) sequences.push_back(std::move(spaced));
  }
  return sequences;
}

void append_banned_tokens(std::span<const std::vector<TokenId>> bad_words_ids, std::span<const TokenId> generated,
                          std::vector<TokenId>& banned) {
  for (const std::vector<TokenId>& ids : bad_words_ids) {
    if (ids.empty()) continue;
    const std::size_t prefix_size = ids.size() - 1;
    if (prefix_size > generated.size()) continue;
    if (std::equal(ids.begin(), ids.end() - 1, generated.end() - static_cast<std::ptrdiff_t>(prefix_size)))
      banned.push_back(ids.back());
  }
}

}  // namespace pagedgen
