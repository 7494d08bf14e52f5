// A JSON string as a deterministic automaton, written as a step function over a small
// state (where inside a character we are, how many characters so far, where in the
// excluded texts' trie) and turned into grammar nodes by visiting every reachable state,
// each byte value's transition grouped into ranges.
//
//   '"' -> content --ASCII--> content (count + 1)
//          content --C2..F4--> inside a character --80..BF--> ... --> content (count + 1)
//          content --'\'--> escape --"\/bfnrt--> content (count + 1)
//                                  --u--> 4 hex digits --> content (count + 1)
//          content --'"'--> closed (final), when count >= min_length
#include "grammar/json_string_rule.h"

#include <map>
#include <tuple>

#include "util/error.h"

namespace pagedgen {
namespace {

enum class Phase : uint8_t { kOpen, kContent, kUtf8, kEscape, kHex, kClosed };

// The excluded texts as a byte trie; node 0 is the root.
class TextTrie {
 public:
  static constexpr uint32_t kOff = ~uint32_t{0};  // the text read so far starts no excluded text

  explicit TextTrie(const std::vector<std::string>& texts) : nodes_(1) {
    for (const std::string& text : texts) {
      uint32_t at = 0;
      for (const char c : text) {
        const auto byte = static_cast<uint8_t>(c);
        auto it = nodes_[at].children.find(byte);
        if (it == nodes_[at].children.end()) {
          it = nodes_[at].children.emplace(byte, static_cast<uint32_t>(nodes_.size())).first;
          nodes_.emplace_back();
        }
        at = it->second;
      }
      nodes_[at].is_text = true;
    }
  }
  uint32_t step(uint32_t at, uint8_t byte) const {
    if (at == kOff) return kOff;
    const auto it = nodes_[at].children.find(byte);
    return it == nodes_[at].children.end() ? kOff : it->second;
  }
  bool is_text(uint32_t at) const { return at != kOff && nodes_[at].is_text; }

 private:
  struct Node {
    std::map<uint8_t, uint32_t> children;
    bool is_text = false;
  };
  std::vector<Node> nodes_;
};

struct State {
  Phase phase = Phase::kOpen;
  uint8_t pending = 0;        // kUtf8: continuation bytes still to come; kHex: hex digits still to come
  uint8_t first_low = 0x80;   // kUtf8: the range the next continuation byte must be in (tighter
  uint8_t first_high = 0xBF;  // after E0, ED, F0, F4); kHex: high = 0x37 when the first digit was D
  uint64_t count = 0;         // characters so far; without a maximum it stops growing at the minimum
  uint32_t trie = 0;          // position in the excluded texts' trie
  auto key() const { return std::tie(phase, pending, first_low, first_high, count, trie); }
  friend bool operator<(const State& a, const State& b) { return a.key() < b.key(); }
};

bool is_hex(uint8_t b) { return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F'); }

class StringAutomaton {
 public:
  explicit StringAutomaton(const JsonStringSpec& spec) : spec_(spec), trie_(spec.excluded) {}

  std::optional<State> step(const State& s, uint8_t b) const {
    switch (s.phase) {
      case Phase::kOpen:
        if (b != '"') return std::nullopt;
        return State{.phase = Phase::kContent, .trie = spec_.excluded.empty() ? TextTrie::kOff : 0};
      case Phase::kContent:
        return content_step(s, b);
      case Phase::kUtf8: {
        if (b < s.first_low || b > s.first_high) return std::nullopt;
        State next = s;
        next.trie = trie_.step(s.trie, b);
        if (s.pending == 1) return character_done(next);
        next.pending = static_cast<uint8_t>(s.pending - 1);
        next.first_low = 0x80;
        next.first_high = 0xBF;
        return next;
      }
      case Phase::kEscape: {
        if (b == 'u') return State{.phase = Phase::kHex, .pending = 4, .count = s.count, .trie = TextTrie::kOff};
        static constexpr std::string_view kEscapes = "\"\\/bfnrt";
        if (kEscapes.find(static_cast<char>(b)) == std::string_view::npos) return std::nullopt;
        return character_done(State{.phase = Phase::kContent, .count = s.count, .trie = TextTrie::kOff});
      }
      case Phase::kHex: {
        // \uD800-\uDFFF are surrogate halves: a lone one is not a character, and a pair
        // would count as two, so neither is written.
        if (!is_hex(b) || (s.first_high == 0x37 && b > '7')) return std::nullopt;
        State next = s;
        next.first_high = (s.pending == 4 && (b == 'd' || b == 'D')) ? 0x37 : 0xBF;
        if (s.pending == 1)
          return character_done(State{.phase = Phase::kContent, .count = s.count, .trie = TextTrie::kOff});
        next.pending = static_cast<uint8_t>(s.pending - 1);
        return next;
      }
      case Phase::kClosed:
        return std::nullopt;
    }
    return std::nullopt;
  }

  static bool is_final(const State& s) { return s.phase == Phase::kClosed; }

 private:
  bool may_start_character(const State& s) const { return !spec_.max_length || s.count < *spec_.max_length; }

  State character_done(State s) const {
    s.phase = Phase::kContent;
    s.pending = 0;
    s.first_low = 0x80;
    s.first_high = 0xBF;
    s.count = spec_.max_length ? s.count + 1 : std::min(s.count + 1, spec_.min_length);
    return s;
  }

  std::optional<State> content_step(const State& s, uint8_t b) const {
    if (b == '"') {
      if (s.count < spec_.min_length || trie_.is_text(s.trie)) return std::nullopt;
      return State{.phase = Phase::kClosed};
    }
    if (b < 0x20 || !may_start_character(s)) return std::nullopt;
    if (b == '\\') {
      if (!spec_.allow_escapes) return std::nullopt;
      return State{.phase = Phase::kEscape, .count = s.count, .trie = TextTrie::kOff};
    }
    State next = s;
    next.trie = trie_.step(s.trie, b);
    if (b < 0x80) return character_done(next);
    // Lead bytes and the range of the first continuation byte (Unicode table 3-7).
    next.phase = Phase::kUtf8;
    if (b >= 0xC2 && b <= 0xDF)
      next.pending = 1;
    else if (b >= 0xE0 && b <= 0xEF)
      next.pending = 2;
    else if (b >= 0xF0 && b <= 0xF4)
      next.pending = 3;
    else
      return std::nullopt;
    if (b == 0xE0) next.first_low = 0xA0;
    if (b == 0xED) next.first_high = 0x9F;
    if (b == 0xF0) next.first_low = 0x90;
    if (b == 0xF4) next.first_high = 0x8F;
    return next;
  }

  const JsonStringSpec& spec_;
  TextTrie trie_;
};

}  // namespace

RuleId add_json_string_rule(GrammarBuilder& builder, const JsonStringSpec& spec, std::string name) {
  PG_CHECK(spec.excluded.empty() || !spec.allow_escapes, "excluded texts need one spelling each");
  const StringAutomaton automaton(spec);
  const RuleId rule = builder.add_rule(std::move(name));
  std::map<State, GrammarNodeId> node_of;
  std::vector<State> pending{State{}};
  node_of.emplace(State{}, builder.rule_start(rule));
  const auto node_for = [&](const State& s) {
    const auto [it, added] = node_of.emplace(s, 0);
    if (added) {
      it->second = builder.add_node(rule);
      if (StringAutomaton::is_final(s)) builder.set_final(it->second);
      pending.push_back(s);
    }
    return it->second;
  };
  while (!pending.empty()) {
    const State s = pending.back();
    pending.pop_back();
    const GrammarNodeId from = node_of.at(s);
    // Consecutive bytes with the same next state become one edge.
    std::optional<GrammarNodeId> run_target;
    int run_start = 0;
    for (int b = 0; b <= 256; ++b) {
      std::optional<GrammarNodeId> target;
      if (b < 256) {
        if (const auto next = automaton.step(s, static_cast<uint8_t>(b))) target = node_for(*next);
      }
      if (target == run_target) continue;
      if (run_target)
        builder.add_byte_range(from, static_cast<uint8_t>(run_start), static_cast<uint8_t>(b - 1), *run_target);
      run_target = target;
      run_start = b;
    }
  }
  return rule;
}

}  // namespace pagedgen
