// The classification walk: depth first over the token trie from one node, one set of
// configurations per trie depth, pruned as soon as no reading survives.
#include "grammar/token_mask_cache.h"

#include "grammar/node_equivalence.h"
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
    // Most of the walk stays on one reading inside one rule (string contents): nothing
    // to expand there.
    const std::vector<PdaConfig>& configs = levels_[depth];
    const bool plain = configs.size() == 1 && grammar_.node(configs[0].node).num_calls == 0 &&
                       !grammar_.node(configs[0].node).is_final;
    const bool may_end = !plain && pda_expand(grammar_, stacks_, configs, expanded_[depth], work_);
    const std::vector<PdaConfig>& expanded = plain ? configs : expanded_[depth];
    const uint32_t children_end = trie_.node(trie_node).node_end;
    for (uint32_t c = TokenTrie::first_child(trie_node); c < children_end; c = trie_.node(c).node_end) {
      const TokenTrie::Node& child = trie_.node(c);
      const bool child_past_end = past_end || (may_end && follow_->test(child.byte));
      pda_advance(grammar_, expanded, child.byte, levels_[depth + 1]);
      if (!levels_[depth + 1].empty()) {
        for (uint32_t t = child.first_token; t < child.first_token + child.num_tokens_here; ++t) accepted_.push_back(t);
        if (child.node_end > c + 1) walk(c, depth + 1, child_past_end);
      } else if (child_past_end) {
        for (uint32_t t = child.first_token; t < child.token_end; ++t) uncertain_.push_back(t);
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

TokenMaskCache::TokenMaskCache(const Grammar& grammar, const TokenTrie& trie, const StopToken& stop)
    : masks_(1), mask_of_node_(grammar.num_nodes(), 0) {
  NodeClassifier classifier(grammar, trie);
  const std::vector<bool> standing = standing_nodes(grammar);
  const std::vector<GrammarNodeId> representative = equivalent_nodes(grammar, trie.max_token_bytes(), stop);
  std::vector<uint32_t> mask_of_class(grammar.num_nodes(), 0);  // [representative]
  for (GrammarNodeId id = 0; id < grammar.num_nodes(); ++id) {
    if (!standing[id]) continue;
    uint32_t& mask = mask_of_class[representative[id]];
    if (mask == 0) {
      stop.throw_if_stopped();
      mask = static_cast<uint32_t>(masks_.size());
      masks_.push_back(classifier.classify(representative[id]));
    }
    mask_of_node_[id] = mask;
  }
}

size_t TokenMaskCache::num_bytes() const {
  size_t total = masks_.size() * sizeof(NodeTokenMasks) + mask_of_node_.size() * sizeof(uint32_t);
  for (const NodeTokenMasks& m : masks_) {
    total += m.accepted_ids.capacity() * sizeof(TokenId) + m.accepted_words.capacity() * sizeof(uint32_t) +
             m.uncertain.capacity() * sizeof(uint32_t);
  }
  return total;
}

}  // namespace pagedgen
