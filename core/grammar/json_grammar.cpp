// Schema nodes to grammar rules: one rule per object, array, union and enum schema; the
// primitive rules (strings by length range, numbers, integers by bounds, booleans, null)
// and the any-value rules shared by every place that uses them, so their tokens are
// classified once. A value inside an object or array is a call to its rule. A composite
// rule is created when first called and built later, from a stack of rules to build, so
// that no depth of schemas deepens the C++ stack.
#include "grammar/json_grammar.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "grammar/grammar_builder.h"
#include "grammar/grammar_error.h"
#include "grammar/json_number_rules.h"
#include "grammar/json_pattern_rule.h"
#include "grammar/json_string_rule.h"
#include "util/error.h"
#include "util/json_quote.h"

namespace pagedgen {
namespace {

// The most key edges one object schema may spell out (check_key_choices): about 360
// optional properties in a row.
constexpr uint64_t kMaxKeyChoices = uint64_t{1} << 16;

class JsonGrammarCompiler {
 public:
  explicit JsonGrammarCompiler(const JsonSchema* schema, const StopToken& stop = {})
      : schema_(schema),
        poll_(stop),
        rule_of_(schema ? schema->schemas.size() : 0),
        followed_(schema ? schema->schemas.size() : 0) {}

  GrammarBuilder& builder() { return builder_; }

  // The rule of the schema `id`, built whole (with every rule it reaches).
  RuleId compile(SchemaId id) {
    const RuleId rule = schema_rule(id);
    while (!to_build_.empty()) {
      poll_.tick();
      const PendingBuild next = to_build_.back();
      to_build_.pop_back();
      (this->*next.build)(schema_->schemas[next.schema], next.rule);
    }
    return rule;
  }

  RuleId any_object_rule() {
    if (any_object_) return *any_object_;
    const RuleId rule = builder_.add_rule("(any object)");
    any_object_ = rule;
    const RuleId key = string_rule(0, std::nullopt);
    const GrammarNodeId open = builder_.add_node(rule), after_key = builder_.add_node(rule),
                        before_value = builder_.add_node(rule), after_value = builder_.add_node(rule),
                        after_comma = builder_.add_node(rule), end = builder_.add_node(rule);
    builder_.set_final(end);
    builder_.add_byte(builder_.rule_start(rule), '{', open);
    builder_.add_byte(open, '}', end);
    builder_.add_call(open, key, after_key);
    builder_.add_byte(after_key, ':', before_value);
    builder_.add_call(before_value, any_value_rule(), after_value);
    builder_.add_byte(after_value, ',', after_comma);
    builder_.add_call(after_comma, key, after_key);
    builder_.add_byte(after_value, '}', end);
    return rule;
  }

 private:
  using Build = void (JsonGrammarCompiler::*)(const Schema&, RuleId);
  // A composite rule created, to be built: its body calls the rules of its subschemas.
  struct PendingBuild {
    Build build;
    SchemaId schema;
    RuleId rule;
  };

  // The rule of the schema `id`: a reference (or a union of one) is its target's rule, found
  // by following the chain; a composite's rule is created now and queued to be built.
  // Each schema is followed at most once over the whole compile (a chain of n references
  // costs n, not the n^2 / 2 of searching the chain at every step).
  RuleId schema_rule(SchemaId id) {
    std::vector<SchemaId> aliases;  // the references followed to reach a schema with a rule
    SchemaId at = id;
    while (!rule_of_[at]) {
      const Schema& s = schema_->schemas[at];
      const bool alias = s.kind == Schema::Kind::kRef || (s.kind == Schema::Kind::kAnyOf && s.alternatives.size() == 1);
      if (!alias) {
        rule_of_[at] = new_rule(at);
        break;
      }
      // Only references alias without a rule of their own, so only they can loop here. A
      // followed alias without a rule is on this chain: every earlier chain's aliases got
      // their rule when it ended (or the compile failed), and new_rule never comes back here
      // (what refers to subschemas is queued).
      if (followed_[at]) fail("{}: $ref leads back to itself with nothing in between; fix the schema", s.location);
      followed_[at] = 1;
      aliases.push_back(at);
      at = s.kind == Schema::Kind::kRef ? s.ref : s.alternatives[0];
    }
    for (const SchemaId alias : aliases) rule_of_[alias] = rule_of_[at];
    return *rule_of_[at];
  }

  RuleId new_rule(SchemaId id) {
    const Schema& s = schema_->schemas[id];
    switch (s.kind) {
      case Schema::Kind::kAny:
        return any_value_rule();
      case Schema::Kind::kNothing:
        return builder_.add_rule(s.location);  // no way through: cut at finish
      case Schema::Kind::kLiterals:
        return literals_rule(s.literals, s.location);
      case Schema::Kind::kAnyOf:
        return queued_rule(&JsonGrammarCompiler::build_any_of, id, s.location);
      case Schema::Kind::kTyped:
        return typed_rule(id);
      case Schema::Kind::kRef:
        break;
    }
    fail("{}: a reference has no rule of its own", s.location);
  }

  // A rule named `name`, built from the schema `id` by `build` once the current rule is done.
  RuleId queued_rule(Build build, SchemaId id, std::string name) {
    const RuleId rule = builder_.add_rule(std::move(name));
    to_build_.push_back({build, id, rule});
    return rule;
  }

  void build_any_of(const Schema& s, RuleId rule) {
    std::vector<RuleId> alternatives;
    for (const SchemaId alternative : s.alternatives) alternatives.push_back(schema_rule(alternative));
    add_alternatives(rule, alternatives);
  }

  // One rule per allowed type; a single type is that rule itself. Object and array rules
  // are built later (queued_rule), as their values may refer back to the schema.
  RuleId typed_rule(SchemaId id) {
    const Schema& s = schema_->schemas[id];
    const uint8_t types = (s.types & kJsonNumber) ? s.types & ~kJsonInteger : s.types;  // integers are numbers
    const bool single = (types & (types - 1)) == 0;
    const auto composite = [&](Build build, std::string_view what) {
      return queued_rule(build, id, single ? s.location : fmt::format("{} ({})", s.location, what));
    };
    std::vector<RuleId> alternatives;
    if (types & kJsonNull) alternatives.push_back(literals_rule({"null"}, "(null)"));
    if (types & kJsonBoolean) alternatives.push_back(literals_rule({"false", "true"}, "(boolean)"));
    if (types & kJsonObject) {
      alternatives.push_back(is_any_object(s) ? any_object_rule()
                                              : composite(&JsonGrammarCompiler::build_object, "object"));
    }
    if (types & kJsonArray) alternatives.push_back(composite(&JsonGrammarCompiler::build_array, "array"));
    if (types & kJsonString && s.pattern)
      alternatives.push_back(add_json_pattern_rule(builder_, *s.pattern, s.min_length, s.max_length, s.location));
    else if (types & kJsonString)
      alternatives.push_back(string_rule(s.min_length, s.max_length));
    if (types & kJsonNumber) alternatives.push_back(number_rule());
    if (types & kJsonInteger) alternatives.push_back(integer_rule(s.minimum, s.maximum));
    if (single) return alternatives.front();
    const RuleId rule = builder_.add_rule(s.location);
    add_alternatives(rule, alternatives);
    return rule;
  }

  bool is_any_object(const Schema& s) const {
    return s.properties.empty() && s.additional_properties &&
           schema_->schemas[*s.additional_properties].kind == Schema::Kind::kAny;
  }

  void add_alternatives(RuleId rule, const std::vector<RuleId>& alternatives) {
    const GrammarNodeId end = builder_.add_node(rule);
    builder_.set_final(end);
    for (const RuleId alternative : alternatives) builder_.add_call(builder_.rule_start(rule), alternative, end);
  }

  // Keys in schema order; a key may be skipped when it is optional:
  //   '{' --'"'--> key j ... '":' --call value j--> after j --','--> '"' --> key j' > j ... --'}'--> end
  void build_object(const Schema& s, RuleId rule) {
    const size_t num_properties = s.properties.size();
    check_key_choices(s);
    const GrammarNodeId open = builder_.add_node(rule), end = builder_.add_node(rule);
    builder_.set_final(end);
    builder_.add_byte(builder_.rule_start(rule), '{', open);
    // after[i]: i properties considered (the last one written); after[0] = nothing written yet.
    std::vector<GrammarNodeId> after(num_properties + 1);
    after[0] = open;
    for (size_t i = 1; i <= num_properties; ++i) after[i] = builder_.add_node(rule);
    std::vector<GrammarNodeId> key_start(num_properties);  // just past the key's opening quote
    for (size_t j = 0; j < num_properties; ++j) {
      key_start[j] = builder_.add_node(rule);
      const std::string quoted = json_quote(s.properties[j].name);
      const GrammarNodeId before_value = builder_.add_literal(key_start[j], quoted.substr(1) + ":");
      builder_.add_call(before_value, schema_rule(s.properties[j].schema), after[j + 1]);
    }
    std::optional<RuleId> extra_key;
    GrammarNodeId after_extra_key = 0, after_extra = 0;
    if (s.additional_properties) {
      extra_key = extra_key_rule(s);
      after_extra_key = builder_.add_node(rule);
      after_extra = builder_.add_node(rule);
      const GrammarNodeId before_value = builder_.add_node(rule), after_comma = builder_.add_node(rule);
      builder_.add_byte(after_extra_key, ':', before_value);
      builder_.add_call(before_value, schema_rule(*s.additional_properties), after_extra);
      builder_.add_byte(after_extra, ',', after_comma);
      builder_.add_call(after_comma, *extra_key, after_extra_key);
      builder_.add_byte(after_extra, '}', end);
    }
    for (size_t i = 0; i <= num_properties; ++i) {
      // What may come after after[i]: the next keys up to the first required one, then,
      // when none of the remaining ones is required, additional keys or the end.
      GrammarNodeId next_key = after[i];
      if (i > 0) {
        next_key = builder_.add_node(rule);
        builder_.add_byte(after[i], ',', next_key);
      }
      bool rest_optional = true;
      for (size_t j = i; j < num_properties && rest_optional; ++j) {
        builder_.add_byte(next_key, '"', key_start[j]);
        rest_optional = !s.properties[j].required;
      }
      if (!rest_optional) continue;
      builder_.add_byte(after[i], '}', end);
      if (extra_key) builder_.add_call(next_key, *extra_key, after_extra_key);
    }
  }

  // The key edges build_object spells out: from each position, one per key that may come
  // next (up to the first required one), so a run of k optional keys costs k(k+1)/2.
  // Refused past kMaxKeyChoices, as the node cap refuses schemas too big to compile.
  static void check_key_choices(const Schema& s) {
    uint64_t num_choices = 0;
    uint64_t reachable = 0;  // keys that may follow position i, counted from the end
    for (size_t i = s.properties.size(); i-- > 0;) {
      reachable = 1 + (s.properties[i].required ? 0 : reachable);
      num_choices += reachable;
    }
    if (num_choices > kMaxKeyChoices)
      refuse_schema(
          "{}: {} properties in this order allow {} choices of the next key, more than the {} the grammar "
          "spells out (a run of optional properties costs the square of its length); mark some of them "
          "required or split the object",
          s.location, s.properties.size(), num_choices, kMaxKeyChoices);
  }

  // An additional key: any string without escapes that is not a listed key.
  RuleId extra_key_rule(const Schema& s) {
    JsonStringSpec spec;
    spec.allow_escapes = false;
    for (const SchemaProperty& p : s.properties) {
      // A key that needs escapes cannot be spelled without them: nothing to exclude.
      if (json_quote(p.name).size() == p.name.size() + 2) spec.excluded.push_back(p.name);
    }
    return add_json_string_rule(builder_, spec, s.location + " (additional key)");
  }

  // Items in order, `prefix_items` first; the counts min_items..max_items are spelled out
  // position by position (past the prefix and min_items, an unbounded array loops):
  //   '[' --call item 0--> after[1] --','--> call item 1 --> after[2] ... --']'--> end
  void build_array(const Schema& s, RuleId rule) {
    const GrammarNodeId open = builder_.add_node(rule), end = builder_.add_node(rule);
    builder_.set_final(end);
    builder_.add_byte(builder_.rule_start(rule), '[', open);
    const uint64_t num_prefix = s.prefix_items.size();
    // The most items the array may hold; none: no limit.
    const std::optional<uint64_t> most =
        s.items ? s.max_items : std::min<uint64_t>(num_prefix, s.max_items.value_or(num_prefix));
    const bool unbounded = !most;
    // Positions 1..num_positions get their own node; an unbounded array loops at the last.
    const uint64_t num_positions = unbounded ? std::max<uint64_t>({num_prefix, s.min_items, 1}) : *most;
    if (num_positions >= GrammarBuilder::kMaxNodes) {
      refuse_schema("{}: arrays of up to {} items are too many positions to spell out; lower maxItems or minItems",
                    s.location, num_positions);
    }
    const auto item_rule = [&](uint64_t position) {
      return schema_rule(position < num_prefix ? s.prefix_items[position] : *s.items);
    };
    std::vector<GrammarNodeId> after(num_positions + 1);
    after[0] = open;
    for (uint64_t p = 1; p <= num_positions; ++p) after[p] = builder_.add_node(rule);
    if (s.min_items == 0) builder_.add_byte(open, ']', end);
    if (num_positions >= 1) builder_.add_call(open, item_rule(0), after[1]);
    for (uint64_t p = 1; p <= num_positions; ++p) {
      if (p >= s.min_items) builder_.add_byte(after[p], ']', end);
      if (p == num_positions && !unbounded) continue;
      const GrammarNodeId after_comma = builder_.add_node(rule);
      builder_.add_byte(after[p], ',', after_comma);
      builder_.add_call(after_comma, item_rule(p), after[std::min(p + 1, num_positions)]);
    }
  }

  // One of several fixed texts, spelled through a byte trie (values sharing a prefix share
  // its nodes, so a matcher holds one reading, not one per value). `name` is the first
  // user's; equal lists share the rule.
  RuleId literals_rule(const std::vector<std::string>& literals, const std::string& name) {
    if (const auto it = literal_rules_.find(literals); it != literal_rules_.end()) return it->second;
    const RuleId rule = builder_.add_rule(name);
    std::map<std::pair<GrammarNodeId, uint8_t>, GrammarNodeId> child;
    for (const std::string& literal : literals) {
      GrammarNodeId at = builder_.rule_start(rule);
      for (const char c : literal) {
        const auto edge = std::pair{at, static_cast<uint8_t>(c)};
        auto it = child.find(edge);
        if (it == child.end()) {
          it = child.emplace(edge, builder_.add_node(rule)).first;
          builder_.add_byte(at, edge.second, it->second);
        }
        at = it->second;
      }
      builder_.set_final(at);
    }
    literal_rules_.emplace(literals, rule);
    return rule;
  }

  RuleId string_rule(uint64_t min_length, std::optional<uint64_t> max_length) {
    const auto key = std::pair{min_length, max_length};
    if (const auto it = string_rules_.find(key); it != string_rules_.end()) return it->second;
    JsonStringSpec spec;
    spec.min_length = min_length;
    spec.max_length = max_length;
    const RuleId rule = add_json_string_rule(
        builder_, spec,
        fmt::format("(string of {}..{} characters)", min_length, max_length ? std::to_string(*max_length) : "any"));
    string_rules_.emplace(key, rule);
    return rule;
  }

  RuleId number_rule() {
    if (!number_) number_ = add_json_number_rule(builder_, "(number)");
    return *number_;
  }

  RuleId integer_rule(std::optional<int64_t> minimum, std::optional<int64_t> maximum) {
    const auto key = std::pair{minimum, maximum};
    if (const auto it = integer_rules_.find(key); it != integer_rules_.end()) return it->second;
    const RuleId rule = add_json_integer_rule(builder_, minimum.value_or(std::numeric_limits<int64_t>::min()),
                                              maximum.value_or(std::numeric_limits<int64_t>::max()), "(integer)");
    integer_rules_.emplace(key, rule);
    return rule;
  }

  RuleId any_value_rule() {
    if (any_value_) return *any_value_;
    const RuleId rule = builder_.add_rule("(any value)");
    any_value_ = rule;
    add_alternatives(rule, {any_object_rule(), any_array_rule(), string_rule(0, std::nullopt), number_rule(),
                            literals_rule({"false", "null", "true"}, "(literal)")});
    return rule;
  }

  RuleId any_array_rule() {
    if (any_array_) return *any_array_;
    const RuleId rule = builder_.add_rule("(any array)");
    any_array_ = rule;
    const GrammarNodeId open = builder_.add_node(rule), after_item = builder_.add_node(rule),
                        after_comma = builder_.add_node(rule), end = builder_.add_node(rule);
    builder_.set_final(end);
    builder_.add_byte(builder_.rule_start(rule), '[', open);
    builder_.add_byte(open, ']', end);
    builder_.add_call(open, any_value_rule(), after_item);
    builder_.add_byte(after_item, ',', after_comma);
    builder_.add_call(after_comma, any_value_rule(), after_item);
    builder_.add_byte(after_item, ']', end);
    return rule;
  }

  const JsonSchema* schema_;  // null for json_object_grammar
  StopPoll poll_;
  GrammarBuilder builder_;
  std::vector<std::optional<RuleId>> rule_of_;  // [schema id]
  std::vector<char> followed_;                  // [schema id] followed as an alias by schema_rule
  std::vector<PendingBuild> to_build_;
  std::map<std::vector<std::string>, RuleId> literal_rules_;
  std::map<std::pair<uint64_t, std::optional<uint64_t>>, RuleId> string_rules_;
  std::map<std::pair<std::optional<int64_t>, std::optional<int64_t>>, RuleId> integer_rules_;
  std::optional<RuleId> number_, any_value_, any_object_, any_array_;
};

}  // namespace

Grammar json_schema_grammar(const JsonSchema& schema, const StopToken& stop) {
  JsonGrammarCompiler compiler(&schema, stop);
  const RuleId root = compiler.compile(schema.root);
  return compiler.builder().finish(root, stop);
}

Grammar json_schema_grammar(std::string_view schema_text, const StopToken& stop) {
  return json_schema_grammar(parse_json_schema(schema_text, stop), stop);
}

Grammar json_object_grammar() {
  JsonGrammarCompiler compiler(nullptr);
  const RuleId root = compiler.any_object_rule();
  return compiler.builder().finish(root);
}

}  // namespace pagedgen
