#include "sample/response_format.h"

#include "grammar/gbnf_grammar.h"
#include "grammar/json_grammar.h"
#include "grammar/regex_grammar.h"
#include "util/error.h"

namespace pagedgen {

std::string_view response_format_type_name(ResponseFormat::Type type) {
  switch (type) {
    case ResponseFormat::Type::kText:
      return "text";
    case ResponseFormat::Type::kJsonObject:
      return "json_object";
    case ResponseFormat::Type::kJsonSchema:
      return "json_schema";
    case ResponseFormat::Type::kRegex:
      return "regex";
    case ResponseFormat::Type::kChoice:
      return "choice";
    case ResponseFormat::Type::kGrammar:
      return "grammar";
  }
  PG_CHECK(false, "unknown ResponseFormat::Type {}", static_cast<int>(type));
  return {};
}

Grammar response_format_grammar(const ResponseFormat& format, const StopToken& stop) {
  switch (format.type) {
    case ResponseFormat::Type::kJsonObject:
      return json_object_grammar();
    case ResponseFormat::Type::kJsonSchema:
      return json_schema_grammar(format.spec, stop);
    case ResponseFormat::Type::kRegex:
      return regex_grammar(format.spec, stop);
    case ResponseFormat::Type::kChoice:
      return choice_grammar(format.spec, stop);
    case ResponseFormat::Type::kGrammar:
      return gbnf_grammar(format.spec, stop);
    case ResponseFormat::Type::kText:
      break;
  }
  PG_CHECK(false, "a grammar for free text");
  return {};
}

}  // namespace pagedgen
