// Grammar construction and the one-time analysis of finish(): productive and reachable
// nodes, the finiteness checks, and the bytes that may follow each rule.
#include "grammar/grammar_builder.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "grammar/grammar_error.h"
#include "util/error.h"

namespace pagedgen {

RuleId GrammarBuilder::add_rule(std::string name) {
  const auto rule = static_cast<RuleId>(rule_starts_.size());
  rule_names_.push_back(std::move(name));
  rule_starts_.push_back(0);
  rule_starts_.back() = add_node(rule);
  return rule;
}

namespace {

std::string_view source_name(GrammarSource source) {
  switch (source) {
    case GrammarSource::kJsonSchema:
      return "the schema";
    case GrammarSource::kRegex:
      return "the regex";
    case GrammarSource::kChoices:
      return "the choices";
    case GrammarSource::kGbnf:
      return "the grammar";
  }
  return "the input";
}

}  // namespace

GrammarNodeId GrammarBuilder::add_node(RuleId rule) {
  if (nodes_.size() >= kMaxNodes && source_ == GrammarSource::kJsonSchema) {
    refuse_schema(
        "the schema needs more than {} automaton states (very large maxLength, maxItems or "
        "integer bounds, or very many optional properties); lower those bounds",
        kMaxNodes);
  }
  if (nodes_.size() >= kMaxNodes)
    refuse_schema(
        "{} needs more than {} automaton states (large repeat bounds, long or very many alternatives); "
        "make it smaller",
        source_name(source_), kMaxNodes);
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

// The rules reachable from `root` through calls at rule starts, depth first with an
// explicit stack (a grammar's chain of rules is as long as its input makes it): a call at
// a start enters the callee before any byte is consumed, so a cycle here never
// terminates. Returns the first rule found on a cycle.
std::optional<RuleId> find_left_recursion(const std::vector<std::vector<RuleId>>& start_callees, RuleId root) {
  enum : uint8_t { kUnseen, kOnPath, kDone };
  std::vector<uint8_t> color(start_callees.size(), kUnseen);
  std::vector<std::pair<RuleId, size_t>> path{{root, 0}};  // (rule, its next callee to visit)
  color[root] = kOnPath;
  while (!path.empty()) {
    auto& [rule, next] = path.back();
    if (next == start_callees[rule].size()) {
      color[rule] = kDone;
      path.pop_back();
      continue;
    }
    const RuleId callee = start_callees[rule][next++];
    if (color[callee] == kOnPath) return callee;
    if (color[callee] == kUnseen) {
      color[callee] = kOnPath;
      path.emplace_back(callee, 0);
    }
  }
  return std::nullopt;
}

}  // namespace

Grammar GrammarBuilder::finish(RuleId root, const StopToken& stop) const {
  const NodeFlags productive = productive_nodes(stop);
  if (!productive[rule_starts_[root]] && source_ != GrammarSource::kJsonSchema)
    fail("{}: no text matches {} (every way through it needs a rule that never ends); fix it", rule_names_[root],
         source_name(source_));
  if (!productive[rule_starts_[root]]) {
    fail(
        "{}: no JSON value satisfies the schema (an empty enum, a const or enum of the wrong type, "
        "minItems above maxItems, a required property whose schema is false, ...); fix the schema",
        rule_names_[root]);
  }
  const NodeFlags reachable = reachable_nodes(root, productive);
  check_rules_consume(root, reachable, productive);
  check_no_left_recursion(root, reachable, productive);
  Grammar grammar = kept_grammar(root, reachable, productive);
  add_follow_bytes(grammar);
  return grammar;
}

GrammarBuilder::NodeFlags GrammarBuilder::productive_nodes(const StopToken& stop) const {
  // Iterated to a fixed point; going backwards converges fast because edges mostly point
  // to later nodes.
  NodeFlags productive(nodes_.size());
  for (size_t id = 0; id < nodes_.size(); ++id) productive[id] = nodes_[id].is_final;
  for (bool changed = true; changed;) {
    stop.throw_if_stopped();  // one pass per rule of a chain of calls, at worst
    changed = false;
    for (size_t id = nodes_.size(); id-- > 0;) {
      if (productive[id]) continue;
      const Node& node = nodes_[id];
      if (std::ranges::any_of(node.byte_edges, [&](const ByteEdge& e) { return kept(e, productive); }) ||
          std::ranges::any_of(node.calls, [&](const RuleCall& c) { return kept(c, productive); })) {
        productive[id] = changed = true;
      }
    }
  }
  return productive;
}

GrammarBuilder::NodeFlags GrammarBuilder::reachable_nodes(RuleId root, const NodeFlags& productive) const {
  NodeFlags reachable(nodes_.size());
  std::vector<GrammarNodeId> pending;
  const auto visit = [&](GrammarNodeId id) {
    if (!reachable[id]) reachable[id] = 1, pending.push_back(id);
  };
  visit(rule_starts_[root]);
  while (!pending.empty()) {
    const GrammarNodeId id = pending.back();
    pending.pop_back();
    for (const ByteEdge& e : nodes_[id].byte_edges)
      if (kept(e, productive)) visit(e.target);
    for (const RuleCall& c : nodes_[id].calls) {
      if (!kept(c, productive)) continue;
      visit(rule_starts_[c.rule]);
      visit(c.return_node);
    }
  }
  return reachable;
}

void GrammarBuilder::check_rules_consume(RuleId root, const NodeFlags& reachable, const NodeFlags& productive) const {
  // Matching relies on every rule consuming input before it can end (JSON values are
  // never empty): nullable = may end its rule without consuming a byte.
  NodeFlags nullable(nodes_.size());
  for (size_t id = 0; id < nodes_.size(); ++id) nullable[id] = nodes_[id].is_final;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t id = nodes_.size(); id-- > 0;) {
      if (nullable[id] || !reachable[id]) continue;
      for (const RuleCall& c : nodes_[id].calls) {
        if (kept(c, productive) && nullable[rule_starts_[c.rule]] && nullable[c.return_node])
          nullable[id] = changed = true;
      }
    }
  }
  // The root ends on the empty stack, where nothing returns into it again.
  bool root_called = false;
  for (size_t id = 0; id < nodes_.size(); ++id) {
    for (const RuleCall& c : nodes_[id].calls) root_called |= reachable[id] && kept(c, productive) && c.rule == root;
  }
  for (RuleId rule = 0; rule < rule_starts_.size(); ++rule) {
    if (rule == root && !root_called) continue;
    PG_CHECK(!reachable[rule_starts_[rule]] || !nullable[rule_starts_[rule]],
             "rule '{}' can end without consuming a byte", rule_names_[rule]);
  }
}

void GrammarBuilder::check_no_left_recursion(RuleId root, const NodeFlags& reachable,
                                             const NodeFlags& productive) const {
  std::vector<std::vector<RuleId>> start_callees(rule_starts_.size());
  for (RuleId rule = 0; rule < rule_starts_.size(); ++rule) {
    if (!reachable[rule_starts_[rule]]) continue;
    for (const RuleCall& c : nodes_[rule_starts_[rule]].calls)
      if (kept(c, productive)) start_callees[rule].push_back(c.rule);
  }
  const auto cycle = find_left_recursion(start_callees, root);
  if (cycle && source_ != GrammarSource::kJsonSchema)
    fail("{}: the rule can call itself again before any text is written (left recursion); rewrite it",
         rule_names_[*cycle]);
  if (cycle) {
    fail(
        "{}: the schema refers back to itself through $ref before any text is written (left "
        "recursion: the value would have to contain itself at its start); fix the schema",
        rule_names_[*cycle]);
  }
}

Grammar GrammarBuilder::kept_grammar(RuleId root, const NodeFlags& reachable, const NodeFlags& productive) const {
  // Renumbered in the original order.
  std::vector<GrammarNodeId> new_node(nodes_.size(), 0);
  Grammar grammar;
  for (size_t id = 0; id < nodes_.size(); ++id) {
    if (!reachable[id]) continue;
    new_node[id] = static_cast<GrammarNodeId>(grammar.nodes_.size());
    grammar.nodes_.emplace_back();
  }
  std::vector<RuleId> new_rule(rule_starts_.size(), 0);
  for (RuleId rule = 0; rule < rule_starts_.size(); ++rule) {
    if (!reachable[rule_starts_[rule]]) continue;
    new_rule[rule] = static_cast<RuleId>(grammar.rule_starts_.size());
    grammar.rule_starts_.push_back(new_node[rule_starts_[rule]]);
  }
  grammar.root_rule_ = new_rule[root];
  for (size_t id = 0; id < nodes_.size(); ++id) {
    if (!reachable[id]) continue;
    const Node& node = nodes_[id];
    GrammarNode& out = grammar.nodes_[new_node[id]];
    out.rule = new_rule[node.rule];
    out.is_final = node.is_final;
    out.first_byte_edge = static_cast<uint32_t>(grammar.byte_edges_.size());
    for (const ByteEdge& e : node.byte_edges)
      if (kept(e, productive)) grammar.byte_edges_.push_back({e.first_byte, e.last_byte, new_node[e.target]});
    out.num_byte_edges = static_cast<uint32_t>(grammar.byte_edges_.size()) - out.first_byte_edge;
    std::sort(grammar.byte_edges_.begin() + out.first_byte_edge, grammar.byte_edges_.end(),
              [](const ByteEdge& a, const ByteEdge& b) { return a.first_byte < b.first_byte; });
    out.first_call = static_cast<uint32_t>(grammar.calls_.size());
    for (const RuleCall& c : node.calls)
      if (kept(c, productive)) grammar.calls_.push_back({new_rule[c.rule], new_node[c.return_node]});
    out.num_calls = static_cast<uint32_t>(grammar.calls_.size()) - out.first_call;
  }
  return grammar;
}

void GrammarBuilder::add_follow_bytes(Grammar& grammar) {
  // First bytes of each rule, then the bytes that may follow each rule's end: at every
  // call site, what its return node can consume next, and, where the return node may end
  // the caller, whatever follows the caller. Both spread along calls from a work list, so a
  // chain of n rules costs n steps, not n passes over the grammar.
  const size_t num_rules = grammar.rule_starts_.size();
  const auto node_bytes = [&grammar](GrammarNodeId id) {
    std::bitset<256> bytes;
    for (const ByteEdge& e : grammar.byte_edges(id))
      for (int b = e.first_byte; b <= e.last_byte; ++b) bytes.set(static_cast<size_t>(b));
    return bytes;
  };
  const auto spread = [num_rules](std::vector<std::bitset<256>>& bytes, const std::vector<std::vector<RuleId>>& into) {
    std::vector<RuleId> pending(num_rules);
    for (RuleId rule = 0; rule < num_rules; ++rule) pending[rule] = rule;
    while (!pending.empty()) {
      const RuleId from = pending.back();
      pending.pop_back();
      for (const RuleId to : into[from]) {
        const std::bitset<256> merged = bytes[to] | bytes[from];
        if (merged != bytes[to]) bytes[to] = merged, pending.push_back(to);
      }
    }
  };
  std::vector<std::bitset<256>> first_bytes(num_rules);
  std::vector<std::vector<RuleId>> start_callers(num_rules);  // [callee] rules whose start calls it
  for (RuleId rule = 0; rule < num_rules; ++rule) {
    first_bytes[rule] = node_bytes(grammar.rule_starts_[rule]);
    for (const RuleCall& c : grammar.calls(grammar.rule_starts_[rule])) start_callers[c.rule].push_back(rule);
  }
  spread(first_bytes, start_callers);
  grammar.follow_bytes_.assign(num_rules, {});
  std::vector<std::vector<RuleId>> ended_callees(num_rules);  // [caller] rules whose end may end it
  for (GrammarNodeId id = 0; id < grammar.nodes_.size(); ++id) {
    for (const RuleCall& c : grammar.calls(id)) {
      std::bitset<256>& bytes = grammar.follow_bytes_[c.rule];
      bytes |= node_bytes(c.return_node);
      for (const RuleCall& next : grammar.calls(c.return_node)) bytes |= first_bytes[next.rule];
      if (grammar.nodes_[c.return_node].is_final) ended_callees[grammar.nodes_[id].rule].push_back(c.rule);
    }
  }
  spread(grammar.follow_bytes_, ended_callees);
}

}  // namespace pagedgen
