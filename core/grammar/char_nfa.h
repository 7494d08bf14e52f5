// CharNfa: a nondeterministic automaton over Unicode code points, the common form that the
// regex, choice and GBNF front ends write before it is lowered to grammar nodes
// (nfa_lowering.h). Edges are code point ranges, empty moves, or calls of a named rule
// (GBNF's nonterminals). Fragments are built Thompson-style; every fragment's start has
// no incoming edge and its accept state no outgoing one, so a bypass or a loop can be
// added around it without changing what it matches inside.
//
//   repeat(x, 2, 3):  x --> x --> x?      each x a copy of the states x was built from
//
// The number of states is capped (kMaxStates): bounds such as a{1000000} are refused with
// an UnsupportedSchemaError naming the cap before any state is copied.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace pagedgen {

using NfaStateId = uint32_t;

struct CodePointRange {
  char32_t first;  // inclusive
  char32_t last;
};

inline constexpr char32_t kMaxCodePoint = 0x10FFFF;

// The code points not in `ranges` (any order, may overlap), surrogates left out: a
// negated class, \D, \W, \S.
std::vector<CodePointRange> complement_ranges(std::span<const CodePointRange> ranges);

struct NfaRangeEdge {
  CodePointRange range;
  NfaStateId target;
};

struct NfaCallEdge {
  uint32_t rule;  // the front end's rule index
  NfaStateId target;
};

struct NfaState {
  std::vector<NfaRangeEdge> ranges;
  std::vector<NfaCallEdge> calls;
  std::vector<NfaStateId> empty_moves;
};

// A piece under construction: its states are [first_state, the NFA's size when it was
// completed), entered at `start`, left from `accept`.
struct NfaFragment {
  NfaStateId first_state;
  NfaStateId start;
  NfaStateId accept;
};

class CharNfa {
 public:
  // `what` names the input in refusals ("the regex", "the grammar").
  explicit CharNfa(std::string_view what) : what_(what) {}

  static constexpr size_t kMaxStates = size_t{1} << 18;

  size_t num_states() const { return states_.size(); }
  const NfaState& state(NfaStateId id) const { return states_[id]; }

  NfaFragment empty();
  NfaFragment ranges(std::span<const CodePointRange> ranges);
  NfaFragment call(uint32_t rule);
  // The UTF-8 text's code points in order; `text` must be valid UTF-8.
  NfaFragment literal(std::string_view text);
  // `a` then `b`; `b` must have been built after `a`.
  NfaFragment concat(NfaFragment a, NfaFragment b);
  // Either of `alternatives`, all built in order, the first first.
  NfaFragment alternate(std::span<const NfaFragment> alternatives);
  // `x` repeated min_count times or more, at most max_count times (nullopt: no bound). `x`
  // must be the last fragment built (its states are the NFA's last). Throws
  // UnsupportedSchemaError when the copies would pass kMaxStates.
  NfaFragment repeat(NfaFragment x, uint64_t min_count, std::optional<uint64_t> max_count);

 private:
  NfaStateId add_state();
  // x's states [x.first_state, end) again, after every state there is.
  NfaFragment copy(NfaFragment x, NfaStateId end);
  NfaFragment optional(NfaFragment x);
  // x one or more times (x+), or also none (x*) when `may_skip`.
  NfaFragment loop(NfaFragment x, bool may_skip);

  std::string_view what_;
  std::vector<NfaState> states_;
};

}  // namespace pagedgen
