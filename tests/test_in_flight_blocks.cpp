// InFlightBlocks and BlockKeyChain: a sequence's chained keys, and the blocks being computed
// counted per sequence, by key and by (parent key, first token).
#include <doctest/doctest.h>

#include <vector>

#include "kv/in_flight_blocks.h"
#include "kv/prefix_hash.h"

using namespace pagedgen;

TEST_CASE("a chain extends by the full blocks of the tokens, each key chained on the one before") {
  const std::vector<TokenId> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  BlockKeyChain chain;
  chain.extend(tokens, 4, &prefix_block_key);
  REQUIRE(chain.keys.size() == 2);
  const uint64_t k0 = prefix_block_key(kRootPrefixKey, std::span(tokens).first(4));
  CHECK(chain.keys[0] == k0);
  CHECK(chain.keys[1] == prefix_block_key(k0, std::span(tokens).subspan(4, 4)));
  CHECK(chain.first_tokens == std::vector<TokenId>{1, 5});
  CHECK(chain.parent_key(0) == kRootPrefixKey);
  CHECK(chain.child_key(1) == ChildKey{k0, 5});
  chain.extend(tokens, 4, &prefix_block_key);  // nothing new
  CHECK(chain.keys.size() == 2);
}

TEST_CASE("in-flight blocks are counted per sequence and leave when the last one is done") {
  BlockKeyChain chain{.keys = {10, 11, 12}, .first_tokens = {1, 5, 9}, .num_committed_blocks = 1};
  InFlightBlocks in_flight;
  in_flight.add(chain);
  in_flight.add(chain);                // a forked sample computes the same blocks
  CHECK_FALSE(in_flight.has_key(10));  // committed
  CHECK(in_flight.has_key(11));
  CHECK(in_flight.has_child({10, 5}));
  CHECK(in_flight.has_child({11, 9}));
  in_flight.remove(chain, 1);
  CHECK(in_flight.has_key(11));  // the other sample still computes it
  in_flight.remove(chain, 1);
  CHECK_FALSE(in_flight.has_key(11));
  CHECK_FALSE(in_flight.has_child({10, 5}));
  chain.num_committed_blocks = 2;
  in_flight.remove(chain);
  in_flight.remove(chain);
  CHECK_FALSE(in_flight.has_key(12));
  CHECK_FALSE(in_flight.has_child({11, 9}));
}
