// The classification walk: depth first over the token trie from one node, one set of
// configurations per trie depth, pruned as soon as no reading survives.
#include "grammar/token_mask_cache.h"

#include "grammar/pda_state.h"
#include "grammar/token_bitmask.h"

namespace pagedgen {
namespace {

class NodeClassifier {
 public:
  NodeClassifier(const Grammar& grammar, const TokenTrie& trie)
      : grammar_(grammar), trie_(trie), levels_(trie.max_token_bytes() + 1), expanded_(trie.max_token_bytes() + 1) {}

  NodeTokenMasks classify(GrammarNodeId node) {
    // The stack starts empty: "the end of the node's own rule", whose follow bytes stand
    // for every context the rule can be called from.
    stacks_.clear();
    accepted_.clear();
    uncertain_.clear();
    follow_ = &grammar_.follow_bytes(grammar_.node(node).rule);
    levels_[0].assign(1, PdaConfig{node, kEmptyStack});
    walk(TokenTrie::kRoot, 0, false);
    return masks();
  }

 private:
  // `past_end`: some reading of the path to here ran past the rule's end into a byte a
  // caller accepts, so tokens below that fail inside the rule are uncertain, not rejected.
  void walk(uint32_t trie_node, size_t depth, bool past_end) {
    const bool may_end = pda_expand(grammar_, stacks_, levels_[depth], expanded_[depth], work_);
    const TokenTrie::Node& parent = trie_.node(trie_node);
    for (uint32_t c = parent.first_child; c < parent.first_child + parent.num_children; ++c) {
      const TokenTrie::Node& child = trie_.node(c);
      const bool child_past_end = past_end || (may_end && follow_->test(child.byte));
      pda_advance(grammar_, expanded_[depth], child.byte, levels_[depth + 1]);
      if (!levels_[depth + 1].empty()) {
        for (uint32_t t = child.first_token; t < child.first_token + child.num_tokens_here; ++t) accepted_.push_back(t);
        if (child.num_children > 0) walk(c, depth + 1, child_past_end);
      } else if (child_past_end) {
        for (uint32_t t = child.first_token; t < child.subtree_end; ++t) uncertain_.push_back(t);
      }
    }
  }

  NodeTokenMasks masks() const {
    NodeTokenMasks out;
    const size_t num_words = token_mask_words(trie_.vocabulary().size());
    if (accepted_.size() > num_words) {
      out.accepted_words.assign(num_words, 0);
      for (const uint32_t t : accepted_) allow_token(out.accepted_words, trie_.token_id(t));
    } else {
      out.accepted_ids.reserve(accepted_.size());
      for (const uint32_t t : accepted_) out.accepted_ids.push_back(trie_.token_id(t));
    }
    out.uncertain = uncertain_;
    return out;
  }

  const Grammar& grammar_;
  const TokenTrie& trie_;
  const std::bitset<256>* follow_ = nullptr;
  StackPool stacks_;
  std::vector<std::vector<PdaConfig>> levels_;    // [depth] configurations after `depth` bytes
  std::vector<std::vector<PdaConfig>> expanded_;  // [depth] the same, expanded
  std::vector<PdaConfig> work_;
  std::vector<uint32_t> accepted_;   // trie-sorted indices
  std::vector<uint32_t> uncertain_;  // trie-sorted indices
};

// Where a matcher can stand between bytes: the root's start and every byte edge's target.
std::vector<bool> standing_nodes(const Grammar& grammar) {
  std::vector<bool> standing(grammar.num_nodes());
  standing[grammar.rule_start(grammar.root_rule())] = true;
  for (GrammarNodeId id = 0; id < grammar.num_nodes(); ++id)
    for (const ByteEdge& edge : grammar.byte_edges(id)) standing[edge.target] = true;
  return standing;
}

}  // namespace

TokenMaskCache::TokenMaskCache(const Grammar& grammar, const TokenTrie& trie) : masks_(grammar.num_nodes()) {
  NodeClassifier classifier(grammar, trie);
  const std::vector<bool> standing = standing_nodes(grammar);
  for (GrammarNodeId id = 0; id < grammar.num_nodes(); ++id)
    if (standing[id]) masks_[id] = classifier.classify(id);
}

size_t TokenMaskCache::num_uncertain_tokens() const {
  size_t total = 0;
  for (const NodeTokenMasks& m : masks_) total += m.uncertain.size();
  return total;
}

size_t TokenMaskCache::num_bytes() const {
  size_t total = masks_.size() * sizeof(NodeTokenMasks);
  for (const NodeTokenMasks& m : masks_) {
    total += m.accepted_ids.capacity() * sizeof(TokenId) + m.accepted_words.capacity() * sizeof(uint32_t) +
             m.uncertain.capacity() * sizeof(uint32_t);
  }
  return total;
}

}  // namespace pagedgen
