// prefix_block_key: fixed values (computed independently in Python from the documented
// byte layout), chaining, and sensitivity to parent, tokens and length.
#include <doctest/doctest.h>

#include <vector>

#include "kv/prefix_hash.h"

using namespace pagedgen;

TEST_CASE("prefix_block_key matches the documented FNV-1a + splitmix64 layout") {
  // python: fnv1a over le64(parent) | le32(len) | le32(token)..., then splitmix64's finaliser
  const std::vector<TokenId> first = {1, 2, 3, 4};
  const std::vector<TokenId> second = {5, 6, 7, 8};
  const uint64_t key1 = prefix_block_key(kRootPrefixKey, first);
  CHECK(key1 == 0x025a997826e6b670ull);
  CHECK(prefix_block_key(key1, second) == 0xc123e4d7f55fe3eeull);
  CHECK(prefix_block_key(kRootPrefixKey, {}) == 0xd9fcda3a106d20e0ull);
  const std::vector<TokenId> odd = {-1, 128000, 0};
  CHECK(prefix_block_key(kRootPrefixKey, odd) == 0x40a669a2ddc6c0b5ull);
}

TEST_CASE("prefix_block_key depends on the parent, every token and the length") {
  const std::vector<TokenId> tokens = {10, 20, 30, 40};
  const uint64_t base = prefix_block_key(kRootPrefixKey, tokens);
  CHECK(prefix_block_key(kRootPrefixKey + 1, tokens) != base);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::vector<TokenId> changed = tokens;
    changed[i] += 1;
    CHECK(prefix_block_key(kRootPrefixKey, changed) != base);
  }
  CHECK(prefix_block_key(kRootPrefixKey, std::span(tokens).first(3)) != base);
  // Same block under two different parents: different keys, so position is part of the key.
  CHECK(prefix_block_key(base, tokens) != base);
}
