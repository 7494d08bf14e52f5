// Reading a JSON Schema document with simdjson's DOM: one Schema per subschema reached,
// memoized by JSON pointer so that every $ref to the same place (recursion included)
// reaches the same node. A subschema gets its id when first reached and is read later,
// from a stack of pending ones, so that no chain of $refs, however long, deepens the C++
// stack (the document's own nesting is bounded by the JSON reader's depth limit).
#include "grammar/json_schema.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>

#include "grammar/grammar_error.h"
#include "grammar/json_schema_bounds.h"
#include "grammar/json_schema_keywords.h"
#include "grammar/json_pointer.h"
#include "util/error.h"

namespace pagedgen {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

class SchemaReader {
 public:
  SchemaReader(element root, const StopToken& stop) : root_(root), pointers_(root), poll_(stop) {}

  // Reads the whole document, the root first; returns the root's id.
  SchemaId read_document() {
    const SchemaId root = read(root_, "");
    while (!pending_.empty()) {
      poll_.tick();
      const Pending next = pending_.back();
      pending_.pop_back();
      const std::size_t num_pending = pending_.size();
      schemas_[next.id] = read_schema(next.value, next.pointer);
      // The subschemas it reached are read next, in document order.
      std::reverse(pending_.begin() + static_cast<std::ptrdiff_t>(num_pending), pending_.end());
    }
    return root;
  }

  std::vector<Schema> take() { return std::move(schemas_); }

 private:
  struct Pending {
    element value;
    std::string pointer;
    SchemaId id;
  };

  // The id of the schema at `pointer` (a JSON pointer into the document, "" for the root);
  // a schema not reached before is read by read_document's loop.
  SchemaId read(element value, const std::string& pointer) {
    if (const auto it = by_pointer_.find(pointer); it != by_pointer_.end()) return it->second;
    const auto id = static_cast<SchemaId>(schemas_.size());
    by_pointer_.emplace(pointer, id);
    schemas_.emplace_back();
    pending_.push_back({value, pointer, id});
    return id;
  }

  Schema read_schema(element value, const std::string& pointer) {
    Schema schema;
    schema.location = "#" + pointer;
    if (value.type() == element_type::BOOL) {
      schema.kind = bool(value) ? Schema::Kind::kAny : Schema::Kind::kNothing;
      return schema;
    }
    if (value.type() != element_type::OBJECT)
      fail("{}: a schema must be an object or a boolean, not {}", schema.location, json_type_name(value));
    const SchemaKeywords keywords = read_schema_keywords(value, schema.location, pointer.empty());
    if (!read_combination(schema, keywords, pointer)) read_values(schema, keywords, pointer);
    return schema;
  }

  // Refuses `main` beside any keyword but itself and `allowed`.
  static void alone(const SchemaKeywords& keywords, SchemaKeyword main, std::initializer_list<SchemaKeyword> allowed,
                    const std::string& at) {
    for (size_t k = 0; k < kNumSchemaKeywords; ++k) {
      const auto keyword = static_cast<SchemaKeyword>(k);
      if (keyword == main || !keywords[k] || std::ranges::find(allowed, keyword) != allowed.end()) continue;
      refuse_schema(
          "{}: '{}' beside '{}' is not supported; move the constraint into the schema '{}' refers to or lists", at,
          keyword_name(keyword), keyword_name(main), keyword_name(main));
    }
  }

  // A schema made of others ($ref, allOf, anyOf, oneOf): reads it and returns true.
  bool read_combination(Schema& schema, const SchemaKeywords& keywords, const std::string& pointer) {
    const std::string& at = schema.location;
    if (keywords[kRef]) {
      alone(keywords, kRef, {}, at);
      schema.kind = Schema::Kind::kRef;
      schema.ref = read_ref(*keywords[kRef], at);
      return true;
    }
    if (keywords[kAllOf]) {
      alone(keywords, kAllOf, {}, at);
      const auto list = schema_list(*keywords[kAllOf]);
      if (list.size() != 1)
        refuse_schema("{}: 'allOf' with {} schemas is not supported (only one); merge them", at, list.size());
      schema.kind = Schema::Kind::kRef;
      schema.ref = read(list[0], pointer + "/allOf/0");
      return true;
    }
    if (!keywords[kAnyOf] && !keywords[kOneOf]) return false;
    // oneOf is generated as anyOf: a value matching two alternatives is not prevented
    // (alternatives that overlap are rare; Pydantic's discriminated unions do not).
    const SchemaKeyword which = keywords[kAnyOf] ? kAnyOf : kOneOf;
    alone(keywords, which, {}, at);
    const auto list = schema_list(*keywords[which]);
    if (list.empty()) fail("{}: '{}' must list at least one schema", at, keyword_name(which));
    schema.kind = Schema::Kind::kAnyOf;
    for (size_t i = 0; i < list.size(); ++i)
      schema.alternatives.push_back(read(list[i], fmt::format("{}/{}/{}", pointer, keyword_name(which), i)));
    return true;
  }

  // A schema of values: literals (enum, const) or typed values with their constraints.
  void read_values(Schema& schema, const SchemaKeywords& keywords, const std::string& pointer) {
    const std::string& at = schema.location;
    schema.types = keywords[kType] ? read_types(*keywords[kType], at) : kAllJsonTypes;
    if (keywords[kEnum] || keywords[kConst]) {
      const SchemaKeyword which = keywords[kEnum] ? kEnum : kConst;
      alone(keywords, which, {kType}, at);
      read_literals(schema, *keywords[which], which == kEnum);
      return;
    }
    schema.kind = Schema::Kind::kTyped;
    if (schema.types & kJsonObject) read_object(schema, keywords, pointer);
    if (schema.types & kJsonArray) read_array(schema, keywords, pointer);
    if (schema.types & kJsonString) {
      if (keywords[kMinLength]) schema.min_length = read_count(*keywords[kMinLength], at, "minLength");
      if (keywords[kMaxLength]) schema.max_length = read_count(*keywords[kMaxLength], at, "maxLength");
      if (keywords[kPattern]) schema.pattern = std::string(std::string_view(*keywords[kPattern]));
      if (schema.max_length && schema.min_length > *schema.max_length) {
        fail("{}: minLength {} is above maxLength {}: no string satisfies the schema", at, schema.min_length,
             *schema.max_length);
      }
    }
    if (schema.types & (kJsonNumber | kJsonInteger)) read_bounds(schema, keywords);
  }

  // The elements of a keyword's array (checked to be one by read_schema_keywords).
  static std::vector<element> schema_list(element value) {
    std::vector<element> list;
    for (const element item : simdjson::dom::array(value)) list.push_back(item);
    return list;
  }

  SchemaId read_ref(element value, const std::string& at) {
    const std::string_view ref = std::string_view(value);
    if (!ref.starts_with('#')) {
      refuse_schema("{}: $ref '{}' is not supported: only references inside this schema ('#/$defs/Name') are", at, ref);
    }
    const std::string pointer = percent_decode(ref.substr(1));
    if (!pointer.empty() && pointer.front() != '/') {
      refuse_schema("{}: $ref '{}' names an anchor, which is not supported; use a JSON pointer such as '#/$defs/Name'",
                    at, ref);
    }
    const std::optional<element> target = pointers_.resolve(pointer);
    if (!target) fail("{}: $ref '{}' points to nothing in the schema", at, ref);
    return read(*target, pointer);
  }

  static void read_literals(Schema& schema, element value, bool is_enum) {
    const std::vector<element> values = is_enum ? schema_list(value) : std::vector<element>{value};
    schema.kind = Schema::Kind::kLiterals;
    for (const element item : values) {
      if (!(literal_types(item) & schema.types)) continue;
      std::string text = simdjson::minify(item);
      if (std::ranges::find(schema.literals, text) == schema.literals.end()) schema.literals.push_back(std::move(text));
    }
    if (schema.literals.empty()) {
      fail("{}: '{}' has no value of the schema's type: no value satisfies the schema", schema.location,
           is_enum ? "enum" : "const");
    }
  }

  void read_object(Schema& schema, const SchemaKeywords& keywords, const std::string& pointer) {
    const std::string& at = schema.location;
    if (const auto& properties = keywords[kProperties]) {
      for (const auto field : simdjson::dom::object(*properties)) {
        const SchemaId id = read(field.value, pointer + "/properties/" + pointer_token(field.key));
        schema.properties.push_back({std::string(field.key), id, false});
      }
    }
    if (const auto& additional = keywords[kAdditionalProperties]) {
      if (additional->type() == element_type::BOOL) {
        if (bool(*additional)) schema.additional_properties = any_schema();
      } else {
        schema.additional_properties = read(*additional, pointer + "/additionalProperties");
      }
    } else if (schema.properties.empty()) {
      schema.additional_properties = any_schema();  // a bare {"type": "object"} means any object
    }
    if (const auto& required = keywords[kRequired]) {
      for (const element name : simdjson::dom::array(*required)) {
        const std::string_view key = std::string_view(name);
        const auto listed = std::ranges::find(schema.properties, key, &SchemaProperty::name);
        if (listed != schema.properties.end()) {
          listed->required = true;
          continue;
        }
        // Required but not described: its value follows additionalProperties, or anything
        // when that keyword is absent.
        if (keywords[kAdditionalProperties] && !schema.additional_properties) {
          fail(
              "{}: required property '{}' is not in 'properties' and additionalProperties is false: no object "
              "satisfies the schema",
              at, key);
        }
        const SchemaId value = schema.additional_properties.value_or(any_schema());
        schema.properties.push_back({std::string(key), value, true});
      }
    }
  }

  void read_array(Schema& schema, const SchemaKeywords& keywords, const std::string& pointer) {
    const std::string& at = schema.location;
    std::optional<element> rest = keywords[kItems];
    std::string rest_pointer = pointer + "/items";
    std::optional<element> prefix = keywords[kPrefixItems];
    std::string prefix_pointer = pointer + "/prefixItems";
    if (rest && rest->type() == element_type::ARRAY) {
      // Drafts before 2020-12: an items array is the prefix, additionalItems the rest.
      if (prefix) refuse_schema("{}: 'items' as an array beside 'prefixItems' is not supported; use prefixItems", at);
      prefix = rest;
      prefix_pointer = rest_pointer;
      rest = keywords[kAdditionalItems];
      rest_pointer = pointer + "/additionalItems";
    }
    if (prefix) {
      const auto list = schema_list(*prefix);
      for (size_t i = 0; i < list.size(); ++i)
        schema.prefix_items.push_back(read(list[i], fmt::format("{}/{}", prefix_pointer, i)));
    }
    if (!rest) {
      schema.items = any_schema();
    } else if (rest->type() == element_type::BOOL) {
      if (bool(*rest)) schema.items = any_schema();
    } else {
      schema.items = read(*rest, rest_pointer);
    }
    if (keywords[kMinItems]) schema.min_items = read_count(*keywords[kMinItems], at, "minItems");
    if (keywords[kMaxItems]) schema.max_items = read_count(*keywords[kMaxItems], at, "maxItems");
    if (schema.max_items && schema.min_items > *schema.max_items) {
      fail("{}: minItems {} is above maxItems {}: no array satisfies the schema", at, schema.min_items,
           *schema.max_items);
    }
    if (!schema.items && schema.min_items > schema.prefix_items.size()) {
      fail("{}: minItems {} is above the {} items the schema allows: no array satisfies it", at, schema.min_items,
           schema.prefix_items.size());
    }
  }

  static void read_bounds(Schema& schema, const SchemaKeywords& keywords) {
    const std::string& at = schema.location;
    for (const SchemaKeyword k : {kMinimum, kMaximum, kExclusiveMinimum, kExclusiveMaximum}) {
      if (keywords[k] && (schema.types & kJsonNumber)) {
        refuse_schema(
            "{}: '{}' is supported for integers only (\"type\": \"integer\"), not for numbers; make the value an "
            "integer or remove the bound",
            at, keyword_name(k));
      }
    }
    // Draft 4 writes exclusiveMinimum: true beside minimum; later drafts give the bound itself.
    const auto flag = [&](SchemaKeyword k) {
      return keywords[k] && keywords[k]->type() == element_type::BOOL && bool(*keywords[k]);
    };
    const auto number = [&](SchemaKeyword k) { return keywords[k] && keywords[k]->type() != element_type::BOOL; };
    const auto tighten_lower = [&](int64_t bound) { schema.minimum = std::max(schema.minimum.value_or(bound), bound); };
    const auto tighten_upper = [&](int64_t bound) { schema.maximum = std::min(schema.maximum.value_or(bound), bound); };
    if (keywords[kMinimum])
      tighten_lower(integer_lower_bound(*keywords[kMinimum], flag(kExclusiveMinimum), at, "minimum"));
    if (number(kExclusiveMinimum))
      tighten_lower(integer_lower_bound(*keywords[kExclusiveMinimum], true, at, "exclusiveMinimum"));
    if (keywords[kMaximum])
      tighten_upper(integer_upper_bound(*keywords[kMaximum], flag(kExclusiveMaximum), at, "maximum"));
    if (number(kExclusiveMaximum))
      tighten_upper(integer_upper_bound(*keywords[kExclusiveMaximum], true, at, "exclusiveMaximum"));
    if (schema.minimum && schema.maximum && *schema.minimum > *schema.maximum) {
      fail("{}: the integer bounds leave no value (least {}, greatest {})", at, *schema.minimum, *schema.maximum);
    }
  }

  // One node for "any value", shared by every place that allows anything.
  SchemaId any_schema() {
    if (!any_) {
      any_ = static_cast<SchemaId>(schemas_.size());
      schemas_.emplace_back().location = "(any value)";  // Kind::kAny
    }
    return *any_;
  }

  element root_;
  std::vector<Schema> schemas_;
  std::map<std::string, SchemaId> by_pointer_;
  std::vector<Pending> pending_;  // reached, not read yet
  JsonPointerResolver pointers_;
  std::optional<SchemaId> any_;
  StopPoll poll_;
};

}  // namespace

JsonSchema parse_json_schema(std::string_view text, const StopToken& stop) {
  simdjson::dom::parser parser;
  element root;
  if (const auto error = parser.parse(simdjson::padded_string(text)).get(root)) {
    fail("the JSON schema is not valid JSON: {}", simdjson::error_message(error));
  }
  SchemaReader reader(root, stop);
  JsonSchema schema;
  schema.root = reader.read_document();
  schema.schemas = reader.take();
  return schema;
}

}  // namespace pagedgen
