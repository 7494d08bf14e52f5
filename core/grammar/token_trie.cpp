// Sorting the vocabulary and laying its trie out depth first.
#include "grammar/token_trie.h"

#include <algorithm>
#include <utility>

namespace pagedgen {

TokenTrie::TokenTrie(TokenVocabulary vocabulary) : vocabulary_(std::move(vocabulary)) {
  const auto& bytes = vocabulary_.bytes_by_id;
  const auto& eog = vocabulary_.end_of_generation;
  for (TokenId id = 0; id < vocabulary_.size(); ++id) {
    if (bytes[static_cast<size_t>(id)].empty() || std::find(eog.begin(), eog.end(), id) != eog.end()) continue;
    sorted_ids_.push_back(id);
    max_token_bytes_ = std::max(max_token_bytes_, bytes[static_cast<size_t>(id)].size());
  }
  // Ties (two ids with the same bytes) keep id order, so the layout is deterministic.
  std::stable_sort(sorted_ids_.begin(), sorted_ids_.end(), [&bytes](TokenId a, TokenId b) {
    return bytes[static_cast<size_t>(a)] < bytes[static_cast<size_t>(b)];
  });
  add_subtree(0, static_cast<uint32_t>(sorted_ids_.size()), 0, 0);
}

void TokenTrie::add_subtree(uint32_t first, uint32_t end, size_t depth, uint8_t byte) {
  // Recursion depth is the longest token's length in bytes.
  const auto index = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back(Node{.first_token = first, .token_end = end, .byte = byte});
  uint32_t at = first;
  while (at < end && token_bytes(at).size() == depth) ++at;
  nodes_[index].num_tokens_here = at - first;
  while (at < end) {
    const auto child_byte = static_cast<uint8_t>(token_bytes(at)[depth]);
    uint32_t group_end = at + 1;
    while (group_end < end && static_cast<uint8_t>(token_bytes(group_end)[depth]) == child_byte) ++group_end;
    add_subtree(at, group_end, depth + 1, child_byte);
    at = group_end;
  }
  nodes_[index].node_end = static_cast<uint32_t>(nodes_.size());
}

}  // namespace pagedgen
