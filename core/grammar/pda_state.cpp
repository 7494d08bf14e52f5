// Interned stacks and the expand / advance moves of the pushdown automaton.
#include "grammar/pda_state.h"

#include <algorithm>

#include "util/fnv_hash.h"

namespace pagedgen {
namespace {

constexpr uint64_t kNoKey = ~uint64_t{0};  // parent ids stay below 2^32 - 1
constexpr size_t kInitialSlots = 64;

void sort_unique(std::vector<PdaConfig>& configs) {
  if (configs.size() < 2) return;
  std::sort(configs.begin(), configs.end());
  configs.erase(std::unique(configs.begin(), configs.end()), configs.end());
}

}  // namespace

StackPool::StackPool() { clear(); }

void StackPool::clear() {
  frames_.assign(1, Frame{kEmptyStack, 0});
  slot_keys_.assign(kInitialSlots, kNoKey);
  slot_ids_.assign(kInitialSlots, kEmptyStack);
}

StackId StackPool::push(StackId parent, GrammarNodeId return_node) {
  const uint64_t k = key(parent, return_node);
  const size_t mask = slot_keys_.size() - 1;
  for (size_t slot = splitmix64_finalize(k) & mask;; slot = (slot + 1) & mask) {
    if (slot_keys_[slot] == k) return slot_ids_[slot];
    if (slot_keys_[slot] != kNoKey) continue;
    const auto id = static_cast<StackId>(frames_.size());
    frames_.push_back({parent, return_node});
    slot_keys_[slot] = k;
    slot_ids_[slot] = id;
    if (2 * frames_.size() > slot_keys_.size()) grow();
    return id;
  }
}

void StackPool::grow() {
  const size_t num_slots = 2 * slot_keys_.size();
  slot_keys_.assign(num_slots, kNoKey);
  slot_ids_.assign(num_slots, kEmptyStack);
  const size_t mask = num_slots - 1;
  for (StackId id = 1; id < frames_.size(); ++id) {
    const uint64_t k = key(frames_[id].parent, frames_[id].return_node);
    size_t slot = splitmix64_finalize(k) & mask;
    while (slot_keys_[slot] != kNoKey) slot = (slot + 1) & mask;
    slot_keys_[slot] = k;
    slot_ids_[slot] = id;
  }
}

bool pda_expand(const Grammar& grammar, StackPool& stacks, std::span<const PdaConfig> configs,
                std::vector<PdaConfig>& expanded, std::vector<PdaConfig>& work) {
  // Terminates without a visited set: the grammar has no rule that ends without consuming
  // a byte and no call cycle at rule starts (GrammarBuilder::finish checks both), so every
  // push leads to a start that pushes finitely often and every return pops.
  expanded.clear();
  work.assign(configs.begin(), configs.end());
  bool may_end = false;
  while (!work.empty()) {
    const PdaConfig config = work.back();
    work.pop_back();
    const GrammarNode& node = grammar.node(config.node);
    if (node.num_byte_edges > 0) expanded.push_back(config);
    for (const RuleCall& call : grammar.calls(config.node)) {
      work.push_back({grammar.rule_start(call.rule), stacks.push(config.stack, call.return_node)});
    }
    if (node.is_final) {
      if (config.stack == kEmptyStack) {
        may_end = true;
      } else {
        work.push_back({stacks.return_node(config.stack), stacks.parent(config.stack)});
      }
    }
  }
  sort_unique(expanded);
  return may_end;
}

bool pda_may_end(const Grammar& grammar, const StackPool& stacks, std::span<const PdaConfig> configs) {
  for (PdaConfig config : configs) {
    while (grammar.node(config.node).is_final) {
      if (config.stack == kEmptyStack) return true;
      config = {stacks.return_node(config.stack), stacks.parent(config.stack)};
    }
  }
  return false;
}

void pda_advance(const Grammar& grammar, std::span<const PdaConfig> expanded, uint8_t byte,
                 std::vector<PdaConfig>& advanced) {
  advanced.clear();
  for (const PdaConfig& config : expanded) {
    for (const ByteEdge& edge : grammar.byte_edges(config.node)) {
      if (edge.first_byte > byte) break;  // edges are sorted by first byte
      if (byte <= edge.last_byte) advanced.push_back({edge.target, config.stack});
    }
  }
  sort_unique(advanced);
}

}  // namespace pagedgen
