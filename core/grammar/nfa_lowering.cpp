// CharNfa -> byte NFA (each code point edge spelled as byte chains through states of its
// own) -> one deterministic automaton per rule, built state by state from a work list:
// a state is the set of NFA states the text so far may stand at, closed over empty moves
// and skipped calls, with the number of characters written so far where it matters.
#include "grammar/nfa_lowering.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "grammar/grammar_error.h"
#include "grammar/utf8_ranges.h"
#include "util/error.h"
#include "util/fnv_hash.h"

namespace pagedgen {
namespace {

struct ByteEdgeTo {
  ByteRange range;
  NfaStateId target;
};

struct ByteState {
  std::vector<ByteEdgeTo> bytes;
  std::vector<NfaCallEdge> calls;
  std::vector<NfaStateId> empty_moves;
  bool boundary = true;  // between characters (a CharNfa state), not inside one's bytes
};

// A character's spelling inside a JSON string when it cannot be written raw.
std::optional<std::string> json_escape(char32_t c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      break;
  }
  if (c >= 0x20) return std::nullopt;
  return fmt::format("\\u{:04x}", static_cast<uint32_t>(c));
}

class ByteNfa {
 public:
  ByteNfa(const CharNfa& nfa, CharSpelling spelling) : states_(nfa.num_states()) {
    for (NfaStateId id = 0; id < nfa.num_states(); ++id) {
      const NfaState& s = nfa.state(id);
      states_[id].calls = s.calls;
      states_[id].empty_moves = s.empty_moves;
      for (const NfaRangeEdge& e : s.ranges) add_range(id, e.range, e.target, spelling);
    }
  }
  const ByteState& state(NfaStateId id) const { return states_[id]; }
  size_t num_states() const { return states_.size(); }

 private:
  void add_range(NfaStateId from, CodePointRange range, NfaStateId to, CharSpelling spelling) {
    if (spelling == CharSpelling::kJsonString) {
      // Characters that need an escape one by one, the runs between them raw.
      char32_t run_start = range.first;
      for (char32_t c = range.first; c <= std::min<char32_t>(range.last, 0x7F); ++c) {
        const auto escape = json_escape(c);
        if (!escape) continue;
        if (c > run_start) add_utf8(from, {run_start, c - 1}, to);
        add_chain(from, *escape, to);
        run_start = c + 1;
      }
      if (run_start <= range.last) add_utf8(from, {run_start, range.last}, to);
      return;
    }
    add_utf8(from, range, to);
  }
  // Built from the end: the continuation bytes' states are shared by every pattern with
  // the same tail (`.` needs a few, not one chain per pattern), so fewer deterministic
  // states stand inside characters.
  void add_utf8(NfaStateId from, CodePointRange range, NfaStateId to) {
    for (const Utf8Pattern& p : utf8_patterns(range)) {
      NfaStateId next = to;
      for (uint8_t i = p.length - 1; i > 0; --i) next = tail_state(p.bytes[i], next);
      add_edge(from, p.bytes[0], next);
    }
  }
  // The state inside a character that reads `range` and goes to `next`.
  NfaStateId tail_state(ByteRange range, NfaStateId next) {
    const auto [it, added] = tails_.emplace(std::tuple{range.first, range.last, next}, 0);
    if (added) {
      it->second = static_cast<NfaStateId>(states_.size());
      states_.emplace_back().boundary = false;
      states_.back().bytes.push_back({range, next});
    }
    return it->second;
  }
  void add_chain(NfaStateId from, std::string_view bytes, NfaStateId to) {
    NfaStateId at = from;
    for (size_t i = 0; i < bytes.size(); ++i) {
      const auto b = static_cast<uint8_t>(bytes[i]);
      at = add_edge(at, {b, b}, i + 1 == bytes.size() ? std::optional(to) : std::nullopt);
    }
  }
  // An edge to `to`, or to a new state inside a character; returns its target.
  NfaStateId add_edge(NfaStateId from, ByteRange range, std::optional<NfaStateId> to) {
    if (!to) {
      to = static_cast<NfaStateId>(states_.size());
      states_.emplace_back().boundary = false;
    }
    states_[from].bytes.push_back({range, *to});
    return *to;
  }

  std::vector<ByteState> states_;
  std::map<std::tuple<uint8_t, uint8_t, NfaStateId>, NfaStateId> tails_;
};

using StateSet = std::vector<NfaStateId>;  // sorted, distinct

class Lowerer {
 public:
  Lowerer(GrammarBuilder& builder, const CharNfa& nfa, std::span<const NfaRule> rules, const NfaLowering& lowering,
          const StopToken& stop)
      : builder_(builder),
        nfa_(nfa, lowering.spelling),
        rules_(rules),
        lowering_(lowering),
        stop_(stop),
        nullable_(rules.size()),
        called_rule_(rules.size()),
        seen_(nfa_.num_states(), 0) {
    find_nullable_rules();
  }

  RuleId lower(uint32_t start) {
    const RuleId rule = builder_.add_rule(rules_[start].name);
    build(rule, start, {lowering_.min_chars, lowering_.max_chars, lowering_.quoted});
    while (!to_build_.empty()) {
      const auto [built, source] = to_build_.back();
      to_build_.pop_back();
      build(built, source, {1, std::nullopt, false});  // a called rule never matches the empty text
    }
    return rule;
  }

 private:
  struct Limits {
    uint64_t min_chars;
    std::optional<uint64_t> max_chars;
    bool quoted;
  };
  using DfaKey = std::pair<StateSet, uint64_t>;  // (NFA states, characters so far)
  struct DfaKeyHash {
    size_t operator()(const DfaKey& key) const {
      uint64_t hash = fnv1a_le(kFnvOffsetBasis, key.second, 8);
      for (const NfaStateId id : key.first) hash = fnv1a_le(hash, id, 4);
      return static_cast<size_t>(splitmix64_finalize(hash));
    }
  };

  // `seeds` and every state reached from them by empty moves and skipped calls.
  StateSet closure(StateSet seeds) {
    ++stamp_;  // marks this call's visits in seen_
    StateSet out;
    std::vector<NfaStateId> pending = std::move(seeds);
    while (!pending.empty()) {
      const NfaStateId id = pending.back();
      pending.pop_back();
      if (seen_[id] == stamp_) continue;
      seen_[id] = stamp_;
      out.push_back(id);
      const ByteState& s = nfa_.state(id);
      for (const NfaStateId t : s.empty_moves) pending.push_back(t);
      for (const NfaCallEdge& c : s.calls)
        if (nullable_[c.rule]) pending.push_back(c.target);
    }
    std::ranges::sort(out);
    return out;
  }

  void find_nullable_rules() {
    for (bool changed = true; changed;) {
      changed = false;
      for (uint32_t r = 0; r < rules_.size(); ++r) {
        if (nullable_[r]) continue;
        if (std::ranges::binary_search(closure({rules_[r].body.start}), rules_[r].body.accept))
          nullable_[r] = changed = true;
      }
    }
  }

  RuleId called_rule(uint32_t rule) {
    if (!called_rule_[rule]) {
      called_rule_[rule] = builder_.add_rule(rules_[rule].name);
      to_build_.emplace_back(*called_rule_[rule], rule);
    }
    return *called_rule_[rule];
  }

  void build(RuleId rule, uint32_t source, const Limits& limits);
  GrammarNodeId dfa_node(RuleId rule, DfaKey key);
  void add_byte_edges(GrammarNodeId from, RuleId rule, const DfaKey& key, const Limits& limits);
  void add_calls(GrammarNodeId from, RuleId rule, const DfaKey& key, const Limits& limits);
  uint64_t counted(uint64_t chars, const Limits& limits) const {
    return limits.max_chars ? chars + 1 : std::min(chars + 1, limits.min_chars);
  }
  bool may_write(const DfaKey& key, const Limits& limits) const {
    return !limits.max_chars || key.second < *limits.max_chars || !nfa_.state(key.first.front()).boundary;
  }

  GrammarBuilder& builder_;
  ByteNfa nfa_;
  std::span<const NfaRule> rules_;
  const NfaLowering& lowering_;
  StopToken stop_;
  std::vector<char> nullable_;                      // [rule]
  std::vector<std::optional<RuleId>> called_rule_;  // [rule] its non-empty version, once called
  std::vector<std::pair<RuleId, uint32_t>> to_build_;
  // The rule being built: its states so far, and those whose edges are still to add.
  std::unordered_map<DfaKey, GrammarNodeId, DfaKeyHash> node_of_;
  std::vector<DfaKey> pending_;
  std::vector<uint32_t> seen_;  // [byte NFA state] the closure call that last visited it
  uint32_t stamp_ = 0;
  size_t num_dfa_states_ = 0;
  size_t num_set_entries_ = 0;
  GrammarNodeId accept_node_ = 0;  // quoted: after the closing quote
};

void Lowerer::build(RuleId rule, uint32_t source, const Limits& limits) {
  node_of_.clear();
  num_dfa_states_ = 0;
  const NfaRule& r = rules_[source];
  DfaKey start{closure({r.body.start}), 0};
  if (limits.quoted) {
    const GrammarNodeId open = builder_.add_node(rule);
    builder_.add_byte(builder_.rule_start(rule), '"', open);
    accept_node_ = builder_.add_node(rule);
    builder_.set_final(accept_node_);
    node_of_.emplace(start, open);
    pending_.push_back(std::move(start));
  } else {
    node_of_.emplace(start, builder_.rule_start(rule));
    pending_.push_back(std::move(start));
  }
  while (!pending_.empty()) {
    stop_.throw_if_stopped();
    const DfaKey key = std::move(pending_.back());
    pending_.pop_back();
    const GrammarNodeId node = node_of_.at(key);
    if (std::ranges::binary_search(key.first, r.body.accept) && key.second >= limits.min_chars) {
      if (limits.quoted)
        builder_.add_byte(node, '"', accept_node_);
      else
        builder_.set_final(node);
    }
    if (!may_write(key, limits)) continue;
    add_byte_edges(node, rule, key, limits);
    add_calls(node, rule, key, limits);
  }
}

GrammarNodeId Lowerer::dfa_node(RuleId rule, DfaKey key) {
  const auto it = node_of_.find(key);
  if (it != node_of_.end()) return it->second;
  num_set_entries_ += key.first.size();
  if (++num_dfa_states_ > kMaxDfaStates || num_set_entries_ > kMaxDfaSetEntries)
    refuse_schema(
        "{} needs more than {} deterministic automaton states in one rule ({} NFA states in their sets at most); "
        "simplify it or lower its repeat bounds",
        lowering_.what, kMaxDfaStates, kMaxDfaSetEntries);
  const GrammarNodeId node = builder_.add_node(rule);
  node_of_.emplace(key, node);
  pending_.push_back(std::move(key));
  return node;
}

void Lowerer::add_byte_edges(GrammarNodeId from, RuleId rule, const DfaKey& key, const Limits& limits) {
  // The bytes where some edge starts or stops cut 0..255 into runs every edge covers whole.
  std::vector<int> cuts{0, 256};
  for (const NfaStateId id : key.first)
    for (const ByteEdgeTo& e : nfa_.state(id).bytes) cuts.insert(cuts.end(), {e.range.first, e.range.last + 1});
  std::ranges::sort(cuts);
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    const int first = cuts[i], last = cuts[i + 1] - 1;
    StateSet targets;
    for (const NfaStateId id : key.first)
      for (const ByteEdgeTo& e : nfa_.state(id).bytes)
        if (e.range.first <= first && last <= e.range.last) targets.push_back(e.target);
    if (targets.empty()) continue;
    StateSet next = closure(std::move(targets));
    const uint64_t chars = nfa_.state(next.front()).boundary ? counted(key.second, limits) : key.second;
    const GrammarNodeId to = dfa_node(rule, {std::move(next), chars});
    builder_.add_byte_range(from, static_cast<uint8_t>(first), static_cast<uint8_t>(last), to);
  }
}

void Lowerer::add_calls(GrammarNodeId from, RuleId rule, const DfaKey& key, const Limits& limits) {
  std::map<uint32_t, StateSet> targets_of;  // callee -> where its calls return
  for (const NfaStateId id : key.first)
    for (const NfaCallEdge& c : nfa_.state(id).calls) targets_of[c.rule].push_back(c.target);
  for (auto& [callee, targets] : targets_of) {
    const RuleId callee_rule = called_rule(callee);
    const GrammarNodeId to = dfa_node(rule, {closure(std::move(targets)), counted(key.second, limits)});
    builder_.add_call(from, callee_rule, to);
  }
}

}  // namespace

RuleId lower_nfa_rules(GrammarBuilder& builder, const CharNfa& nfa, std::span<const NfaRule> rules, uint32_t start,
                       const NfaLowering& lowering, const StopToken& stop) {
  PG_CHECK(start < rules.size(), "start rule {} of {}", start, rules.size());
  return Lowerer(builder, nfa, rules, lowering, stop).lower(start);
}

}  // namespace pagedgen
