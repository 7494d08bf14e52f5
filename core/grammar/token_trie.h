// The vocabulary's byte strings in sorted order, with the trie over them: tokens that
// share a prefix share the work of matching it. Only tokens that write text are in it;
// end-of-generation tokens never are (the matcher allows them on its own terms).
//
// Nodes are laid out depth first, so a walk over the trie reads memory front to back and
// skips pruned subtrees by jumping forward. A node's first child is the next node; each
// child's subtree ends where its next sibling starts.
//
//   sorted tokens: 0 "a"  1 "ab"  2 "abc"  3 "b"
//   nodes:         0 root [tokens 0-3]   1 'a' {0}   2 'b' {1}   3 'c' {2}   4 'b' {3}
//                  (node_end: root 5, 'a' 4, 'ab' 4, 'abc' 4, 'b' 5)
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "grammar/token_vocabulary.h"

namespace pagedgen {

class TokenTrie {
 public:
  struct Node {
    uint32_t node_end = 0;         // index past this node's subtree: its next sibling, if any
    uint32_t first_token = 0;      // sorted index of the first token in this subtree
    uint32_t num_tokens_here = 0;  // tokens whose bytes end at this node: [first_token, +n)
    uint32_t token_end = 0;        // sorted index past the last token in this subtree
    uint8_t byte = 0;              // on the edge from the parent
  };
  static constexpr uint32_t kRoot = 0;

  explicit TokenTrie(TokenVocabulary vocabulary);

  const TokenVocabulary& vocabulary() const { return vocabulary_; }
  std::span<const Node> nodes() const { return nodes_; }
  const Node& node(uint32_t index) const { return nodes_[index]; }
  // Children: for (c = first_child(n); c < node(n).node_end; c = node(c).node_end).
  static uint32_t first_child(uint32_t index) { return index + 1; }
  size_t num_tokens() const { return sorted_ids_.size(); }
  TokenId token_id(uint32_t sorted_index) const { return sorted_ids_[sorted_index]; }
  std::string_view token_bytes(uint32_t sorted_index) const {
    return vocabulary_.bytes_by_id[static_cast<size_t>(sorted_ids_[sorted_index])];
  }
  size_t max_token_bytes() const { return max_token_bytes_; }

 private:
  // Appends the subtree of the tokens [first, end), which share their first `depth` bytes.
  void add_subtree(uint32_t first, uint32_t end, size_t depth, uint8_t byte);

  TokenVocabulary vocabulary_;
  std::vector<TokenId> sorted_ids_;
  std::vector<Node> nodes_;
  size_t max_token_bytes_ = 0;
};

}  // namespace pagedgen
