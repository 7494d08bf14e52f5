// Number and integer rules. An integer range is split by sign and by digit count; the
// numbers of one digit count between lo and hi are a small automaton that remembers only
// whether the digits so far still equal lo's and hi's:
//
//   [130, 245], 3 digits:  '1' (=lo) -> [3-9] ... ;  '2' (=hi) -> [0-4] ... ;  nothing between
#include "grammar/json_number_rules.h"

#include <map>
#include <tuple>

namespace pagedgen {
namespace {

void add_digits(GrammarBuilder& builder, GrammarNodeId from, GrammarNodeId to) { builder.add_byte_range(from, '0', '9', to); }

class IntegerRangeBuilder {
 public:
  IntegerRangeBuilder(GrammarBuilder& builder, RuleId rule) : builder_(builder), rule_(rule) {
    end_ = builder_.add_node(rule_);
    builder_.set_final(end_);
  }

  GrammarNodeId end() const { return end_; }

  // Magnitudes in [low, high] (high absent: no limit), low >= 1, spelled from `from`.
  void add_magnitudes(GrammarNodeId from, uint64_t low, std::optional<uint64_t> high) {
    const size_t low_digits = std::to_string(low).size();
    const size_t high_digits = high ? std::to_string(*high).size() : low_digits;
    for (size_t n = low_digits; n <= high_digits; ++n) {
      const uint64_t first_of_length = power_of_ten(n - 1);
      const uint64_t last_of_length = power_of_ten(n) - 1;  // n <= 19: fits
      const uint64_t lo = std::max(low, first_of_length);
      const uint64_t hi = high ? std::min(*high, last_of_length) : last_of_length;
      if (lo <= hi) add_fixed_length(from, std::to_string(lo), std::to_string(hi));
    }
    if (!high) {
      // Longer than `low`: a non-zero digit, low_digits more, then any number of digits.
      GrammarNodeId at = builder_.add_node(rule_);
      builder_.add_byte_range(from, '1', '9', at);
      for (size_t i = 0; i < low_digits; ++i) {
        const GrammarNodeId next = builder_.add_node(rule_);
        add_digits(builder_, at, next);
        at = next;
      }
      builder_.set_final(at);
      add_digits(builder_, at, at);
    }
  }

 private:
  static uint64_t power_of_ten(size_t n) {
    uint64_t p = 1;
    for (size_t i = 0; i < n; ++i) p *= 10;
    return p;
  }

  // Digit strings of lo's length between lo and hi (lo <= hi, no leading zero in lo).
  void add_fixed_length(GrammarNodeId from, const std::string& lo, const std::string& hi) {
    std::map<std::tuple<size_t, bool, bool>, GrammarNodeId> nodes;  // (position, equal to lo, equal to hi)
    const auto node_at = [&](size_t position, bool on_lo, bool on_hi) {
      if (position == lo.size()) return end_;
      const auto [it, added] = nodes.emplace(std::tuple{position, on_lo, on_hi}, 0);
      if (added) it->second = builder_.add_node(rule_);
      return it->second;
    };
    // Walk the (at most 3 per position) states in position order.
    std::map<std::tuple<size_t, bool, bool>, GrammarNodeId> frontier{{{0, true, true}, from}};
    for (size_t position = 0; position < lo.size(); ++position) {
      std::map<std::tuple<size_t, bool, bool>, GrammarNodeId> next_frontier;
      for (const auto& [state, node] : frontier) {
        const auto [pos, on_lo, on_hi] = state;
        const char first = on_lo ? lo[pos] : '0';
        const char last = on_hi ? hi[pos] : '9';
        for (char d = first; d <= last;) {
          const bool next_lo = on_lo && d == lo[pos];
          const bool next_hi = on_hi && d == hi[pos];
          // Digits strictly between the tight ones share one free target.
          char run_end = d;
          if (!next_lo && !next_hi) {
            while (run_end + 1 <= last && !(on_hi && run_end + 1 == hi[pos])) ++run_end;
          }
          const GrammarNodeId target = node_at(pos + 1, next_lo, next_hi);
          builder_.add_byte_range(node, static_cast<uint8_t>(d), static_cast<uint8_t>(run_end), target);
          if (target != end_) next_frontier.emplace(std::tuple{pos + 1, next_lo, next_hi}, target);
          d = static_cast<char>(run_end + 1);
        }
      }
      frontier = std::move(next_frontier);
    }
  }

  GrammarBuilder& builder_;
  RuleId rule_;
  GrammarNodeId end_;
};

}  // namespace

RuleId add_json_number_rule(GrammarBuilder& builder, std::string name) {
  const RuleId rule = builder.add_rule(std::move(name));
  const GrammarNodeId start = builder.rule_start(rule);
  const auto node = [&](bool is_final) {
    const GrammarNodeId id = builder.add_node(rule);
    if (is_final) builder.set_final(id);
    return id;
  };
  const GrammarNodeId minus = node(false), zero = node(true), digits = node(true);
  const GrammarNodeId point = node(false), fraction = node(true);
  const GrammarNodeId exponent = node(false), exponent_sign = node(false), exponent_digits = node(true);
  for (const GrammarNodeId at : {start, minus}) {
    builder.add_byte(at, '0', zero);
    builder.add_byte_range(at, '1', '9', digits);
  }
  builder.add_byte(start, '-', minus);
  add_digits(builder, digits, digits);
  for (const GrammarNodeId whole : {zero, digits}) builder.add_byte(whole, '.', point);
  add_digits(builder, point, fraction);
  add_digits(builder, fraction, fraction);
  for (const GrammarNodeId at : {zero, digits, fraction}) {
    builder.add_byte(at, 'e', exponent);
    builder.add_byte(at, 'E', exponent);
  }
  builder.add_byte(exponent, '+', exponent_sign);
  builder.add_byte(exponent, '-', exponent_sign);
  add_digits(builder, exponent, exponent_digits);
  add_digits(builder, exponent_sign, exponent_digits);
  add_digits(builder, exponent_digits, exponent_digits);
  return rule;
}

RuleId add_json_integer_rule(GrammarBuilder& builder, std::optional<int64_t> minimum, std::optional<int64_t> maximum,
                             std::string name) {
  const RuleId rule = builder.add_rule(std::move(name));
  const GrammarNodeId start = builder.rule_start(rule);
  IntegerRangeBuilder range(builder, rule);
  if (!minimum || *minimum <= 0) {
    if (!maximum || *maximum >= 0) builder.add_byte(start, '0', range.end());
  }
  // Positive values: [max(minimum, 1), maximum].
  if (!maximum || *maximum >= 1) {
    const uint64_t low = minimum && *minimum > 1 ? static_cast<uint64_t>(*minimum) : 1;
    const std::optional<uint64_t> high = maximum ? std::optional<uint64_t>(static_cast<uint64_t>(*maximum)) : std::nullopt;
    range.add_magnitudes(start, low, high);
  }
  // Negative values, by magnitude: [max(-maximum, 1), -minimum].
  if (!minimum || *minimum <= -1) {
    const auto magnitude = [](int64_t v) { return static_cast<uint64_t>(-(v + 1)) + 1; };  // |v| for v < 0, INT64_MIN too
    const uint64_t low = maximum && *maximum <= -1 ? magnitude(*maximum) : 1;
    const std::optional<uint64_t> high = minimum ? std::optional<uint64_t>(magnitude(*minimum)) : std::nullopt;
    const GrammarNodeId minus = builder.add_node(rule);
    builder.add_byte(start, '-', minus);
    range.add_magnitudes(minus, low, high);
  }
  return rule;
}

}  // namespace pagedgen
