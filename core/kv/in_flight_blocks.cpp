// InFlightBlocks: counts of the prefix blocks being computed; BlockKeyChain: a sequence's keys.
#include "kv/in_flight_blocks.h"

#include "util/error.h"

namespace pagedgen {

void BlockKeyChain::extend(std::span<const TokenId> tokens, int32_t block_size, PrefixKeyFunction key_function) {
  const int64_t num_full_blocks = std::ssize(tokens) / block_size;
  for (int64_t i = std::ssize(keys); i < num_full_blocks; ++i) {
    const auto block_tokens = tokens.subspan(static_cast<std::size_t>(i) * block_size, block_size);
    keys.push_back(key_function(parent_key(static_cast<std::size_t>(i)), block_tokens));
    first_tokens.push_back(block_tokens.front());
  }
}

void InFlightBlocks::add(const BlockKeyChain& chain) {
  for (std::size_t i = static_cast<std::size_t>(chain.num_committed_blocks); i < chain.keys.size(); ++i) {
    ++keys_[chain.keys[i]];
    ++children_[chain.child_key(i)];
  }
}

void InFlightBlocks::remove(const BlockKeyChain& chain, std::size_t block_index) {
  auto key = keys_.find(chain.keys[block_index]);
  auto child = children_.find(chain.child_key(block_index));
  PG_CHECK(key != keys_.end() && child != children_.end(), "block {} of a sequence not in flight", block_index);
  if (--key->second == 0) keys_.erase(key);
  if (--child->second == 0) children_.erase(child);
}

void InFlightBlocks::remove(const BlockKeyChain& chain) {
  for (std::size_t i = static_cast<std::size_t>(chain.num_committed_blocks); i < chain.keys.size(); ++i)
    remove(chain, i);
}

}  // namespace pagedgen
