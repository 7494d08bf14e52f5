// Sorting the vocabulary and building its trie breadth first, so that each node's
// children sit side by side.
#include "grammar/token_trie.h"

#include <algorithm>
#include <deque>
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
  std::stable_sort(sorted_ids_.begin(), sorted_ids_.end(),
                   [&bytes](TokenId a, TokenId b) { return bytes[static_cast<size_t>(a)] < bytes[static_cast<size_t>(b)]; });

  struct Pending {
    uint32_t node;
    uint32_t depth;  // bytes matched on the path to the node
  };
  nodes_.push_back(Node{.first_token = 0, .subtree_end = static_cast<uint32_t>(sorted_ids_.size())});
  std::deque<Pending> pending{{kRoot, 0}};
  while (!pending.empty()) {
    const Pending at = pending.front();
    pending.pop_front();
    uint32_t index = nodes_[at.node].first_token;
    const uint32_t end = nodes_[at.node].subtree_end;
    while (index < end && token_bytes(index).size() == at.depth) ++index;
    nodes_[at.node].num_tokens_here = index - nodes_[at.node].first_token;
    nodes_[at.node].first_child = static_cast<uint32_t>(nodes_.size());
    while (index < end) {
      const auto byte = static_cast<uint8_t>(token_bytes(index)[at.depth]);
      uint32_t group_end = index + 1;
      while (group_end < end && static_cast<uint8_t>(token_bytes(group_end)[at.depth]) == byte) ++group_end;
      nodes_.push_back(Node{.first_token = index, .subtree_end = group_end, .byte = byte});
      pending.push_back({static_cast<uint32_t>(nodes_.size() - 1), at.depth + 1});
      ++nodes_[at.node].num_children;
      index = group_end;
    }
  }
}

}  // namespace pagedgen
