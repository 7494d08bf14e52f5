// A byte-level pushdown automaton: the finished form of a grammar. Rules are small automata
// over bytes whose nodes are joined by byte-range edges and by calls into other rules (a
// call enters the callee's start node and, when the callee ends, resumes at a return node
// of the caller). GrammarBuilder (grammar_builder.h) makes one; nothing changes it after.
//
//   rule "pair":   (start) --'"'--> ... --':'--> (v) --call value--> (end, final)
//
// Every node kept can still reach the end of the root rule (edges into dead ends are cut
// when the grammar is finished), so a matcher never walks into a state with no way out.
#pragma once

#include <bitset>
#include <cstdint>
#include <span>
#include <vector>

namespace pagedgen {

using GrammarNodeId = uint32_t;  // index into Grammar's nodes, all rules together
using RuleId = uint32_t;         // index into Grammar's rules

struct ByteEdge {
  uint8_t first_byte;  // the inclusive byte range [first_byte, last_byte] leads to target
  uint8_t last_byte;
  GrammarNodeId target;
};

struct RuleCall {
  RuleId rule;                // entered at its start node, consuming nothing
  GrammarNodeId return_node;  // where the caller resumes once `rule` has ended
};

struct GrammarNode {
  uint32_t first_byte_edge = 0;  // into Grammar's byte edges
  uint32_t num_byte_edges = 0;
  uint32_t first_call = 0;  // into Grammar's calls
  uint32_t num_calls = 0;
  RuleId rule = 0;        // the rule this node belongs to
  bool is_final = false;  // the rule may end here
};

class Grammar {
 public:
  size_t num_nodes() const { return nodes_.size(); }
  size_t num_rules() const { return rule_starts_.size(); }
  RuleId root_rule() const { return root_rule_; }
  GrammarNodeId rule_start(RuleId rule) const { return rule_starts_[rule]; }
  const GrammarNode& node(GrammarNodeId id) const { return nodes_[id]; }
  std::span<const ByteEdge> byte_edges(GrammarNodeId id) const {
    const GrammarNode& n = nodes_[id];
    return {byte_edges_.data() + n.first_byte_edge, n.num_byte_edges};
  }
  std::span<const RuleCall> calls(GrammarNodeId id) const {
    const GrammarNode& n = nodes_[id];
    return {calls_.data() + n.first_call, n.num_calls};
  }
  // The bytes that can come right after `rule` ends, over every place that calls it
  // (none for the root: after it only end-of-generation may come). The token mask cache
  // uses them to reject ahead of time tokens that run past a rule's end into a byte no
  // caller accepts.
  const std::bitset<256>& follow_bytes(RuleId rule) const { return follow_bytes_[rule]; }

 private:
  friend class GrammarBuilder;
  std::vector<GrammarNode> nodes_;
  std::vector<ByteEdge> byte_edges_;  // grouped by node, each group sorted by first_byte
  std::vector<RuleCall> calls_;       // grouped by node
  std::vector<GrammarNodeId> rule_starts_;
  std::vector<std::bitset<256>> follow_bytes_;
  RuleId root_rule_ = 0;
};

}  // namespace pagedgen
