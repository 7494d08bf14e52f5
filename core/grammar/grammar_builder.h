// Builds a Grammar rule by rule, then finishes it: edges into states that can never reach
// the root's end are cut, unreachable nodes dropped, and the checks that keep matching
// finite (no rule ends without consuming a byte, no rule re-enters itself before
// consuming one) are made once here instead of on every step.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "util/stop_token.h"

namespace pagedgen {

// What the grammar is built from, for the messages of refusals and errors.
enum class GrammarSource : uint8_t { kJsonSchema, kRegex, kChoices, kGbnf };

class GrammarBuilder {
 public:
  explicit GrammarBuilder(GrammarSource source = GrammarSource::kJsonSchema) : source_(source) {}

  // A rule's name appears only in error messages ("#/$defs/Node").
  RuleId add_rule(std::string name);
  GrammarNodeId rule_start(RuleId rule) const { return rule_starts_[rule]; }
  GrammarNodeId add_node(RuleId rule);

  void add_byte_range(GrammarNodeId from, uint8_t first_byte, uint8_t last_byte, GrammarNodeId to);
  void add_byte(GrammarNodeId from, uint8_t byte, GrammarNodeId to) { add_byte_range(from, byte, byte, to); }
  // A chain of fresh nodes in `from`'s rule spelling `bytes`; returns its last node.
  GrammarNodeId add_literal(GrammarNodeId from, std::string_view bytes);
  void add_call(GrammarNodeId from, RuleId rule, GrammarNodeId return_node);
  void set_final(GrammarNodeId node);

  size_t num_nodes() const { return nodes_.size(); }

  // Throws Error when the root admits no text at all, or when a rule can re-enter itself
  // without consuming a byte (left recursion, e.g. a $ref cycle with nothing in between);
  // Stopped when `stop` asks. Only the root may end without consuming a byte (a regex
  // that matches the empty text), and only when no rule calls it.
  Grammar finish(RuleId root, const StopToken& stop = {}) const;

  // More nodes than this is a schema far beyond what dataset schemas need (it would take
  // seconds to precompute token masks): add_node throws UnsupportedSchemaError instead.
  static constexpr size_t kMaxNodes = 1u << 18;

 private:
  struct Node {
    RuleId rule;
    bool is_final = false;
    std::vector<ByteEdge> byte_edges;
    std::vector<RuleCall> calls;
  };
  using NodeFlags = std::vector<char>;  // [node]

  // The steps of finish(), in order. Productive: some path from the node ends its rule;
  // edges into unproductive nodes and calls through them are not kept.
  NodeFlags productive_nodes(const StopToken& stop) const;
  bool kept(const ByteEdge& edge, const NodeFlags& productive) const { return productive[edge.target] != 0; }
  bool kept(const RuleCall& call, const NodeFlags& productive) const {
    return productive[rule_starts_[call.rule]] && productive[call.return_node];
  }
  NodeFlags reachable_nodes(RuleId root, const NodeFlags& productive) const;
  void check_rules_consume(RuleId root, const NodeFlags& reachable, const NodeFlags& productive) const;
  void check_no_left_recursion(RuleId root, const NodeFlags& reachable, const NodeFlags& productive) const;
  Grammar kept_grammar(RuleId root, const NodeFlags& reachable, const NodeFlags& productive) const;
  static void add_follow_bytes(Grammar& grammar);

  GrammarSource source_;
  std::vector<Node> nodes_;
  std::vector<GrammarNodeId> rule_starts_;
  std::vector<std::string> rule_names_;
};

}  // namespace pagedgen
