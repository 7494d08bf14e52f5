// ResponseFormat: what a request's text must be (OpenAI's response_format): free text, any
// JSON object, or a value of one JSON Schema. For the last two the engine compiles a grammar
// (core/grammar) and masks the tokens of every step with it, so the text is always that
// JSON (unless max_tokens cuts it: finish_reason "length").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pagedgen {

struct ResponseFormat {
  enum class Type : uint8_t { kText, kJsonObject, kJsonSchema };
  Type type = Type::kText;
  // kJsonSchema: the schema as compact JSON text (no whitespace outside strings), which
  // identifies its compiled grammar.
  std::string schema;

  bool is_constrained() const { return type != Type::kText; }
  bool operator==(const ResponseFormat&) const = default;
};

// "text", "json_object" or "json_schema", as response_format's "type" spells them.
std::string_view response_format_type_name(ResponseFormat::Type type);

}  // namespace pagedgen
