// The vocabulary's byte strings in sorted order, with the trie over them: tokens that
// share a prefix share the work of matching it. Only tokens that write text are in it;
// end-of-generation tokens never are (the matcher allows them on its own terms).
//
//   sorted:  0 "a"  1 "ab"  2 "abc"  3 "b"        trie: root -a-> n1 {0} -b-> n2 {1} -c-> n3 {2}
//                                                          root -b-> n4 {3}
//   a node's subtree holds the sorted indices [first_token, subtree_end).
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
    uint32_t first_child = 0;   // children are contiguous in nodes(), sorted by byte
    uint32_t num_children = 0;
    uint32_t first_token = 0;   // sorted index of the first token in this subtree
    uint32_t num_tokens_here = 0;  // tokens whose bytes end at this node: [first_token, +n)
    uint32_t subtree_end = 0;   // sorted index past the last token in this subtree
    uint8_t byte = 0;           // on the edge from the parent
  };
  static constexpr uint32_t kRoot = 0;

  explicit TokenTrie(TokenVocabulary vocabulary);

  const TokenVocabulary& vocabulary() const { return vocabulary_; }

  std::span<const Node> nodes() const { return nodes_; }
  const Node& node(uint32_t index) const { return nodes_[index]; }
  size_t num_tokens() const { return sorted_ids_.size(); }
  TokenId token_id(uint32_t sorted_index) const { return sorted_ids_[sorted_index]; }
  std::string_view token_bytes(uint32_t sorted_index) const {
    return vocabulary_.bytes_by_id[static_cast<size_t>(sorted_ids_[sorted_index])];
  }
  size_t max_token_bytes() const { return max_token_bytes_; }

 private:
  TokenVocabulary vocabulary_;
  std::vector<TokenId> sorted_ids_;
  std::vector<Node> nodes_;
  size_t max_token_bytes_ = 0;
};

}  // namespace pagedgen
