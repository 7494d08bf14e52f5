// Tokens classified ahead of time, per automaton node, for one grammar and vocabulary (the
// "adaptive token mask cache" of fast engines). Walking the token trie from a node alone,
// with nothing known of the rules below it on the stack, every token is one of:
//   accepted:  all its bytes are consumed without leaving the node's rule: allowed in any
//              context;
//   rejected:  every reading fails inside the rule, or runs past the rule's end into a
//              byte that no caller of the rule accepts: never allowed;
//   uncertain: a reading runs past the rule's end into a byte some caller accepts: only
//              the real stack decides, so the matcher checks these few per step.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/token_trie.h"
#include "util/stop_token.h"

namespace pagedgen {

struct NodeTokenMasks {
  // The accepted tokens, in one of two forms, whichever is smaller: token ids, or a whole
  // mask ([token_mask_words] words, token_bitmask.h) when they are many.
  std::vector<TokenId> accepted_ids;
  std::vector<uint32_t> accepted_words;
  // Trie-sorted indices (TokenTrie::token_id) of the uncertain tokens, in sorted order so
  // that the check walks shared prefixes once.
  std::vector<uint32_t> uncertain;
};

class TokenMaskCache {
 public:
  // Classifies the whole vocabulary at every node a matcher can stand on (the targets of
  // byte edges and the root's start), once per class of equivalent nodes
  // (node_equivalence.h). Takes about a trie walk per class that accepts most tokens
  // (string contents) and far less for the rest. Throws Stopped when `stop` asks (read
  // before each class's walk).
  TokenMaskCache(const Grammar& grammar, const TokenTrie& trie, const StopToken& stop = {});

  const NodeTokenMasks& node_masks(GrammarNodeId node) const { return masks_[mask_of_node_[node]]; }
  size_t num_classified_nodes() const { return masks_.size() - 1; }  // walks made, for reports
  size_t num_bytes() const;                                          // memory held by the masks

 private:
  std::vector<NodeTokenMasks> masks_;   // masks_[0] is empty: where no matcher stands
  std::vector<uint32_t> mask_of_node_;  // [grammar.num_nodes()] index into masks_
};

}  // namespace pagedgen
