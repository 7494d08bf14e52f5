// Token id lists for the KV and engine tests: runs of consecutive ids and their joins.
#pragma once

#include <numeric>
#include <vector>

#include "step/ids.h"

namespace pagedgen::test {

// `count` ids: first, first + 1, ...
inline std::vector<TokenId> iota_tokens(TokenId first, int count) {
  std::vector<TokenId> tokens(static_cast<std::size_t>(count));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

// `a` followed by `b`.
inline std::vector<TokenId> concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace pagedgen::test
