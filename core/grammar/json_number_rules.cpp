// Number and integer rules. The digits of a magnitude in [low, high] are read by a
// deterministic automaton whose state is the digit count so far and how those digits
// compare with the same-length prefixes of low and high:
//
//   [130, 245]:  "1" (=130's prefix) -"2"-> below 130 so far: ends too short, unless a
//                third digit follows;  "2" (=245's prefix) -"5"-> above: no third digit.
#include "grammar/json_number_rules.h"

#include <limits>
#include <map>
#include <tuple>
#include <vector>

namespace pagedgen {
namespace {

enum class Order : uint8_t { kLess, kEqual, kGreater };

Order compare(char digit, char bound) {
  return digit < bound ? Order::kLess : digit == bound ? Order::kEqual : Order::kGreater;
}

// Spells the magnitudes in [low, high] (1 <= low <= high) from `from`; returns the nodes
// where a magnitude may end.
std::vector<GrammarNodeId> add_magnitudes(GrammarBuilder& builder, RuleId rule, GrammarNodeId from, uint64_t low,
                                          uint64_t high) {
  const std::string lo = std::to_string(low), hi = std::to_string(high);
  using State = std::tuple<size_t, Order, Order>;  // digits so far, vs lo's prefix, vs hi's prefix
  const auto may_end = [&](const State& s) {
    const auto [length, vs_lo, vs_hi] = s;
    return (length > lo.size() || (length == lo.size() && vs_lo != Order::kLess)) &&
           (length < hi.size() || vs_hi != Order::kGreater);
  };
  std::map<State, GrammarNodeId> node_of{{State{0, Order::kEqual, Order::kEqual}, from}};
  std::vector<State> pending{State{0, Order::kEqual, Order::kEqual}};
  std::vector<GrammarNodeId> ends;
  while (!pending.empty()) {
    const State s = pending.back();
    pending.pop_back();
    const auto [length, vs_lo, vs_hi] = s;
    if (length == hi.size()) continue;  // no longer magnitude fits
    const GrammarNodeId at = node_of.at(s);
    for (char d = length == 0 ? '1' : '0'; d <= '9'; ++d) {
      const Order next_lo = length + 1 > lo.size()   ? Order::kGreater
                            : vs_lo == Order::kEqual ? compare(d, lo[length])
                                                     : vs_lo;
      const Order next_hi = vs_hi == Order::kEqual ? compare(d, hi[length]) : vs_hi;
      if (length + 1 == hi.size() && next_hi == Order::kGreater) continue;
      const State next{length + 1, next_lo, next_hi};
      auto [it, added] = node_of.emplace(next, 0);
      if (added) {
        it->second = builder.add_node(rule);
        if (may_end(next)) ends.push_back(it->second);
        pending.push_back(next);
      }
      builder.add_byte(at, static_cast<uint8_t>(d), it->second);
    }
  }
  return ends;
}

// |v| for v < 0, INT64_MIN included.
uint64_t magnitude(int64_t v) { return static_cast<uint64_t>(-(v + 1)) + 1; }

// Nodes where an integer in [minimum, maximum] may end, spelled from `start`; with
// `minus_zero`, "-0" too (a number's "-0.5" starts with it).
std::vector<GrammarNodeId> add_integer(GrammarBuilder& builder, RuleId rule, GrammarNodeId start, int64_t minimum,
                                       int64_t maximum, bool minus_zero) {
  std::vector<GrammarNodeId> ends;
  if (minimum <= 0 && maximum >= 0) {
    const GrammarNodeId zero = builder.add_node(rule);
    builder.add_byte(start, '0', zero);
    ends.push_back(zero);
  }
  if (maximum >= 1) {
    for (const GrammarNodeId end : add_magnitudes(
             builder, rule, start, minimum > 1 ? static_cast<uint64_t>(minimum) : 1, static_cast<uint64_t>(maximum))) {
      ends.push_back(end);
    }
  }
  if (minimum <= -1) {
    const GrammarNodeId minus = builder.add_node(rule);
    builder.add_byte(start, '-', minus);
    if (minus_zero) {
      const GrammarNodeId zero = builder.add_node(rule);
      builder.add_byte(minus, '0', zero);
      ends.push_back(zero);
    }
    for (const GrammarNodeId end :
         add_magnitudes(builder, rule, minus, maximum <= -1 ? magnitude(maximum) : 1, magnitude(minimum))) {
      ends.push_back(end);
    }
  }
  return ends;
}

}  // namespace

RuleId add_json_number_rule(GrammarBuilder& builder, std::string name) {
  const RuleId rule = builder.add_rule(std::move(name));
  const GrammarNodeId start = builder.rule_start(rule);
  const std::vector<GrammarNodeId> whole =
      add_integer(builder, rule, start, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), true);
  const auto node = [&](bool is_final) {
    const GrammarNodeId id = builder.add_node(rule);
    if (is_final) builder.set_final(id);
    return id;
  };
  const GrammarNodeId point = node(false), fraction = node(true);
  const GrammarNodeId exponent = node(false), exponent_sign = node(false), exponent_digit = node(true),
                      exponent_digits = node(true);
  for (const GrammarNodeId at : whole) {
    builder.set_final(at);
    builder.add_byte(at, '.', point);
    builder.add_byte(at, 'e', exponent);
    builder.add_byte(at, 'E', exponent);
  }
  builder.add_byte_range(point, '0', '9', fraction);
  builder.add_byte_range(fraction, '0', '9', fraction);
  builder.add_byte(fraction, 'e', exponent);
  builder.add_byte(fraction, 'E', exponent);
  builder.add_byte(exponent, '+', exponent_sign);
  builder.add_byte(exponent, '-', exponent_sign);
  for (const GrammarNodeId at : {exponent, exponent_sign}) builder.add_byte_range(at, '0', '9', exponent_digit);
  builder.add_byte_range(exponent_digit, '0', '9', exponent_digits);
  return rule;
}

RuleId add_json_integer_rule(GrammarBuilder& builder, int64_t minimum, int64_t maximum, std::string name) {
  const RuleId rule = builder.add_rule(std::move(name));
  for (const GrammarNodeId end : add_integer(builder, rule, builder.rule_start(rule), minimum, maximum, false)) {
    builder.set_final(end);
  }
  return rule;
}

}  // namespace pagedgen
