// Grammar construction and the one-time analysis of finish(): productive and reachable
// nodes, the finiteness checks, and the bytes that may follow each rule.
#include "grammar/grammar_builder.h"

#include <algorithm>
#include <optional>

#include "util/error.h"

namespace pagedgen {

RuleId GrammarBuilder::add_rule(std::string name) {
  const auto rule = static_cast<RuleId>(rule_starts_.size());
  rule_names_.push_back(std::move(name));
  rule_starts_.push_back(0);
  rule_starts_.back() = add_node(rule);
  return rule;
}

GrammarNodeId GrammarBuilder::add_node(RuleId rule) {
  if (nodes_.size() >= kMaxNodes) {
    fail("the schema needs more than {} automaton states (very large maxLength, maxItems or "
         "integer bounds, or very many optional properties); lower those bounds",
         kMaxNodes);
  }
  nodes_.emplace_back().rule = rule;
  return static_cast<GrammarNodeId>(nodes_.size() - 1);
}

void GrammarBuilder::add_byte_range(GrammarNodeId from, uint8_t first_byte, uint8_t last_byte, GrammarNodeId to) {
  PG_CHECK(first_byte <= last_byte && from < nodes_.size() && to < nodes_.size());
  PG_CHECK(nodes_[from].rule == nodes_[to].rule, "byte edges stay inside one rule");
  nodes_[from].byte_edges.push_back({first_byte, last_byte, to});
}

GrammarNodeId GrammarBuilder::add_literal(GrammarNodeId from, std::string_view bytes) {
  GrammarNodeId at = from;
  for (const char c : bytes) {
    const GrammarNodeId next = add_node(nodes_[from].rule);
    add_byte(at, static_cast<uint8_t>(c), next);
    at = next;
  }
  return at;
}

void GrammarBuilder::add_call(GrammarNodeId from, RuleId rule, GrammarNodeId return_node) {
  PG_CHECK(rule < rule_starts_.size() && nodes_[from].rule == nodes_[return_node].rule);
  nodes_[from].calls.push_back({rule, return_node});
}

void GrammarBuilder::set_final(GrammarNodeId node) { nodes_[node].is_final = true; }

namespace {

// The rules reachable from `rule` through calls at rule starts, depth first: a call at a
// start enters the callee before any byte is consumed, so a cycle here never terminates.
// Returns the first rule found on a cycle.
std::optional<RuleId> find_left_recursion(const std::vector<std::vector<RuleId>>& start_callees, RuleId rule,
                                          std::vector<uint8_t>& color) {
  enum : uint8_t { kUnseen, kOnPath, kDone };
  if (color[rule] == kOnPath) return rule;
  if (color[rule] == kDone) return std::nullopt;
  color[rule] = kOnPath;
  for (const RuleId callee : start_callees[rule]) {
    if (const auto cycle = find_left_recursion(start_callees, callee, color)) return cycle;
  }
  color[rule] = kDone;
  return std::nullopt;
}

}  // namespace

Grammar GrammarBuilder::finish(RuleId root) const {
  const size_t num_nodes = nodes_.size();
  const auto start = [this](RuleId rule) { return rule_starts_[rule]; };

  // Productive: some path from the node reaches the end of its rule. Iterated to a fixed
  // point; going backwards converges fast because edges mostly point to later nodes.
  std::vector<char> productive(num_nodes);
  for (size_t id = 0; id < num_nodes; ++id) productive[id] = nodes_[id].is_final;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t id = num_nodes; id-- > 0;) {
      if (productive[id]) continue;
      const Node& node = nodes_[id];
      const bool by_byte = std::ranges::any_of(node.byte_edges, [&](const ByteEdge& e) { return productive[e.target]; });
      const bool by_call = std::ranges::any_of(
          node.calls, [&](const RuleCall& c) { return productive[start(c.rule)] && productive[c.return_node]; });
      if (by_byte || by_call) productive[id] = changed = true;
    }
  }
  if (!productive[start(root)]) {
    fail("{}: no JSON value satisfies the schema (an empty enum, a const or enum of the wrong type, "
         "minItems above maxItems, a required property whose schema is false, ...); fix the schema",
         rule_names_[root]);
  }
  const auto kept_edge = [&](const ByteEdge& e) { return productive[e.target] != 0; };
  const auto kept_call = [&](const RuleCall& c) { return productive[start(c.rule)] && productive[c.return_node]; };

  // Reachable from the root's start over kept edges and calls.
  std::vector<char> reachable(num_nodes);
  std::vector<GrammarNodeId> pending{start(root)};
  reachable[start(root)] = 1;
  const auto visit = [&](GrammarNodeId id) {
    if (!reachable[id]) reachable[id] = 1, pending.push_back(id);
  };
  while (!pending.empty()) {
    const GrammarNodeId id = pending.back();
    pending.pop_back();
    for (const ByteEdge& e : nodes_[id].byte_edges)
      if (kept_edge(e)) visit(e.target);
    for (const RuleCall& c : nodes_[id].calls) {
      if (!kept_call(c)) continue;
      visit(start(c.rule));
      visit(c.return_node);
    }
  }

  // No kept rule may end without consuming a byte: matching relies on every rule call
  // consuming input before its rule can return (JSON values are never empty).
  std::vector<char> nullable(num_nodes);
  for (size_t id = 0; id < num_nodes; ++id) nullable[id] = nodes_[id].is_final;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t id = num_nodes; id-- > 0;) {
      if (nullable[id] || !reachable[id]) continue;
      for (const RuleCall& c : nodes_[id].calls)
        if (kept_call(c) && nullable[start(c.rule)] && nullable[c.return_node]) nullable[id] = changed = true;
    }
  }
  for (RuleId rule = 0; rule < rule_starts_.size(); ++rule) {
    PG_CHECK(!reachable[start(rule)] || !nullable[start(rule)], "rule '{}' can end without consuming a byte",
             rule_names_[rule]);
  }

  std::vector<std::vector<RuleId>> start_callees(rule_starts_.size());
  for (RuleId rule = 0; rule < rule_starts_.size(); ++rule) {
    if (!reachable[start(rule)]) continue;
    for (const RuleCall& c : nodes_[start(rule)].calls)
      if (kept_call(c)) start_callees[rule].push_back(c.rule);
  }
  std::vector<uint8_t> color(rule_starts_.size());
  if (const auto cycle = find_left_recursion(start_callees, root, color)) {
    fail("{}: the schema refers back to itself through $ref before any text is written (left "
         "recursion: the value would have to contain itself at its start); fix the schema",
         rule_names_[*cycle]);
  }

  // Renumber what is kept, in the original order.
  std::vector<GrammarNodeId> new_node(num_nodes, 0);
  Grammar grammar;
  for (size_t id = 0; id < num_nodes; ++id) {
    if (!reachable[id]) continue;
    new_node[id] = static_cast<GrammarNodeId>(grammar.nodes_.size());
    grammar.nodes_.emplace_back();
  }
  std::vector<RuleId> new_rule(rule_starts_.size(), 0);
  for (RuleId rule = 0; rule < rule_starts_.size(); ++rule) {
    if (!reachable[start(rule)]) continue;
    new_rule[rule] = static_cast<RuleId>(grammar.rule_starts_.size());
    grammar.rule_starts_.push_back(new_node[start(rule)]);
  }
  grammar.root_rule_ = new_rule[root];
  for (size_t id = 0; id < num_nodes; ++id) {
    if (!reachable[id]) continue;
    const Node& node = nodes_[id];
    GrammarNode& out = grammar.nodes_[new_node[id]];
    out.rule = new_rule[node.rule];
    out.is_final = node.is_final;
    out.first_byte_edge = static_cast<uint32_t>(grammar.byte_edges_.size());
    for (const ByteEdge& e : node.byte_edges)
      if (kept_edge(e)) grammar.byte_edges_.push_back({e.first_byte, e.last_byte, new_node[e.target]});
    out.num_byte_edges = static_cast<uint32_t>(grammar.byte_edges_.size()) - out.first_byte_edge;
    std::sort(grammar.byte_edges_.begin() + out.first_byte_edge, grammar.byte_edges_.end(),
              [](const ByteEdge& a, const ByteEdge& b) { return a.first_byte < b.first_byte; });
    out.first_call = static_cast<uint32_t>(grammar.calls_.size());
    for (const RuleCall& c : node.calls)
      if (kept_call(c)) grammar.calls_.push_back({new_rule[c.rule], new_node[c.return_node]});
    out.num_calls = static_cast<uint32_t>(grammar.calls_.size()) - out.first_call;
  }

  // First bytes of each rule, then the bytes that may follow each rule's end: at every
  // call site, what its return node can consume next, and, where the return node may end
  // the caller, whatever follows the caller.
  const size_t num_rules = grammar.rule_starts_.size();
  std::vector<std::bitset<256>> first_bytes(num_rules);
  const auto node_bytes = [&grammar](GrammarNodeId id) {
    std::bitset<256> bytes;
    for (const ByteEdge& e : grammar.byte_edges(id))
      for (int b = e.first_byte; b <= e.last_byte; ++b) bytes.set(static_cast<size_t>(b));
    return bytes;
  };
  for (RuleId rule = 0; rule < num_rules; ++rule) first_bytes[rule] = node_bytes(grammar.rule_starts_[rule]);
  for (bool changed = true; changed;) {
    changed = false;
    for (RuleId rule = 0; rule < num_rules; ++rule) {
      std::bitset<256> bytes = first_bytes[rule];
      for (const RuleCall& c : grammar.calls(grammar.rule_starts_[rule])) bytes |= first_bytes[c.rule];
      if (bytes != first_bytes[rule]) first_bytes[rule] = bytes, changed = true;
    }
  }
  grammar.follow_bytes_.assign(num_rules, {});
  for (bool changed = true; changed;) {
    changed = false;
    for (GrammarNodeId id = 0; id < grammar.nodes_.size(); ++id) {
      for (const RuleCall& c : grammar.calls(id)) {
        std::bitset<256> bytes = grammar.follow_bytes_[c.rule] | node_bytes(c.return_node);
        for (const RuleCall& next : grammar.calls(c.return_node)) bytes |= first_bytes[next.rule];
        if (grammar.nodes_[c.return_node].is_final) bytes |= grammar.follow_bytes_[grammar.nodes_[id].rule];
        if (bytes != grammar.follow_bytes_[c.rule]) grammar.follow_bytes_[c.rule] = bytes, changed = true;
      }
    }
  }
  return grammar;
}

}  // namespace pagedgen
