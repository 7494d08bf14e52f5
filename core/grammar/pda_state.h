// The pushdown automaton's moving parts, shared by the matcher and the token mask cache:
// stacks of return nodes kept as interned persistent frames (equal stacks have equal ids,
// so configurations compare as two integers), and the two moves over a set of
// configurations: expand (enter rule calls, return from rules that may end) and advance
// (consume one byte).
//
//   stack id 5 = [frame 5: return to node 40] -> [frame 2: return to node 17] -> empty (id 0)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "grammar/grammar.h"

namespace pagedgen {

using StackId = uint32_t;
inline constexpr StackId kEmptyStack = 0;

// One way the text so far can be read: at `node`, with `stack` to return through.
struct PdaConfig {
  GrammarNodeId node;
  StackId stack;
  friend bool operator==(const PdaConfig&, const PdaConfig&) = default;
  friend auto operator<=>(const PdaConfig&, const PdaConfig&) = default;
};

// Persistent stacks: push() of the same (parent, return node) gives the same id, so a
// stack is never copied and never compared frame by frame. Ids only grow.
class StackPool {
 public:
  StackPool();
  StackId push(StackId parent, GrammarNodeId return_node);
  StackId parent(StackId stack) const { return frames_[stack].parent; }
  GrammarNodeId return_node(StackId stack) const { return frames_[stack].return_node; }
  size_t num_stacks() const { return frames_.size(); }
  void clear();

 private:
  struct Frame {
    StackId parent;
    GrammarNodeId return_node;
  };
  static uint64_t key(StackId parent, GrammarNodeId return_node) { return (uint64_t{parent} << 32) | return_node; }
  void grow();
  std::vector<Frame> frames_;  // frames_[0] stands for the empty stack
  // Open addressing, linear probing, at most half full: key -> frame id.
  std::vector<uint64_t> slot_keys_;
  std::vector<StackId> slot_ids_;
};

// Expands `configs` into `expanded` (sorted, without duplicates): every configuration
// whose node has byte edges, after entering calls and returning from rules that may end
// there. Returns true when a rule may end on the empty stack (for the matcher: the whole
// value may be complete). `work` is scratch space.
bool pda_expand(const Grammar& grammar, StackPool& stacks, std::span<const PdaConfig> configs,
                std::vector<PdaConfig>& expanded, std::vector<PdaConfig>& work);

// Whether a rule may end on the empty stack from `configs` without consuming a byte: what
// pda_expand returns, found by returning from rules only (entering a call never ends one).
bool pda_may_end(const Grammar& grammar, const StackPool& stacks, std::span<const PdaConfig> configs);

// The configurations (sorted, without duplicates) reached from `expanded` by consuming
// `byte`; empty when no configuration accepts it.
void pda_advance(const Grammar& grammar, std::span<const PdaConfig> expanded, uint8_t byte,
                 std::vector<PdaConfig>& advanced);

}  // namespace pagedgen
