// Partition refinement over the grammar's nodes, exact signatures (no hash-only merging,
// which could give two different nodes one class).
#include "grammar/node_equivalence.h"

#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>

#include "util/fnv_hash.h"

namespace pagedgen {
namespace {

struct SignatureHash {
  size_t operator()(const std::vector<uint64_t>& signature) const {
    uint64_t h = kFnvOffsetBasis;
    for (const uint64_t word : signature) h = splitmix64_finalize(h ^ word);
    return h;
  }
};

// Callee starts before their callers: a node's class at a level uses its callees' start
// classes at that same level (entering a rule consumes nothing). Acyclic because no rule
// re-enters itself before consuming a byte (GrammarBuilder::finish).
std::vector<GrammarNodeId> callees_first(const Grammar& grammar) {
  const size_t num_nodes = grammar.num_nodes();
  std::vector<GrammarNodeId> order;
  order.reserve(num_nodes);
  std::vector<uint8_t> state(num_nodes);                  // 0 unseen, 1 open, 2 placed
  std::vector<std::pair<GrammarNodeId, uint32_t>> stack;  // node, next call to follow
  for (GrammarNodeId root = 0; root < num_nodes; ++root) {
    if (state[root]) continue;
    stack.push_back({root, 0});
    state[root] = 1;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      const auto calls = grammar.calls(node);
      if (next < calls.size()) {
        const GrammarNodeId start = grammar.rule_start(calls[next++].rule);
        if (!state[start]) state[start] = 1, stack.push_back({start, 0});
        continue;
      }
      state[node] = 2;
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
}

std::vector<uint32_t> follow_ids(const Grammar& grammar) {
  std::map<std::array<uint64_t, 4>, uint32_t> ids;
  std::vector<uint32_t> by_rule(grammar.num_rules());
  for (RuleId rule = 0; rule < grammar.num_rules(); ++rule) {
    std::array<uint64_t, 4> words{};
    const std::bitset<256>& follow = grammar.follow_bytes(rule);
    for (size_t b = 0; b < 256; ++b)
      if (follow.test(b)) words[b / 64] |= uint64_t{1} << (b % 64);
    by_rule[rule] = ids.emplace(words, static_cast<uint32_t>(ids.size())).first->second;
  }
  return by_rule;
}

}  // namespace

std::vector<GrammarNodeId> equivalent_nodes(const Grammar& grammar, size_t max_bytes, const StopToken& stop) {
  const size_t num_nodes = grammar.num_nodes();
  const std::vector<GrammarNodeId> order = callees_first(grammar);
  const std::vector<uint32_t> follow = follow_ids(grammar);
  std::vector<uint32_t> previous(num_nodes, 0), current(num_nodes, 0);
  size_t num_classes = 1;
  std::vector<uint64_t> signature, edges;
  // Level k tells apart nodes by the strings of up to k + 1 bytes.
  for (size_t level = 0; level < max_bytes; ++level) {
    stop.throw_if_stopped();
    std::unordered_map<std::vector<uint64_t>, uint32_t, SignatureHash> class_of;
    class_of.reserve(num_nodes);
    for (const GrammarNodeId id : order) {
      const GrammarNode& node = grammar.node(id);
      signature.assign({previous[id], (uint64_t{follow[node.rule]} << 1) | (node.is_final ? 1u : 0u)});
      edges.clear();
      for (const ByteEdge& e : grammar.byte_edges(id)) {
        edges.push_back(e.first_byte | (uint64_t{e.last_byte} << 8) | (uint64_t{previous[e.target]} << 16));
      }
      std::sort(edges.begin(), edges.end());
      signature.push_back(edges.size());
      signature.insert(signature.end(), edges.begin(), edges.end());
      edges.clear();
      for (const RuleCall& c : grammar.calls(id)) {
        edges.push_back((uint64_t{current[grammar.rule_start(c.rule)]} << 32) | previous[c.return_node]);
      }
      std::sort(edges.begin(), edges.end());
      signature.insert(signature.end(), edges.begin(), edges.end());
      current[id] = class_of.emplace(signature, static_cast<uint32_t>(class_of.size())).first->second;
    }
    // Each level's classes split the previous level's (a signature holds the node's
    // previous class), so an unchanged count means nothing split: later levels are equal.
    const bool stable = class_of.size() == num_classes;
    num_classes = class_of.size();
    previous.swap(current);
    if (stable) break;
  }
  std::vector<GrammarNodeId> lowest(num_classes, static_cast<GrammarNodeId>(num_nodes));
  for (GrammarNodeId id = 0; id < num_nodes; ++id) lowest[previous[id]] = std::min(lowest[previous[id]], id);
  std::vector<GrammarNodeId> representative(num_nodes);
  for (GrammarNodeId id = 0; id < num_nodes; ++id) representative[id] = lowest[previous[id]];
  return representative;
}

}  // namespace pagedgen
