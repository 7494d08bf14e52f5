// The rules for JSON numbers and integers, in their compact form: no '+', no leading
// zeros. A bounded integer is spelled digit by digit within its range, so the bound holds
// for every output without a check after the fact.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "grammar/grammar_builder.h"

namespace pagedgen {

// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
RuleId add_json_number_rule(GrammarBuilder& builder, std::string name);

// The integers in [minimum, maximum] (each bound optional), "-0" never written.
RuleId add_json_integer_rule(GrammarBuilder& builder, std::optional<int64_t> minimum, std::optional<int64_t> maximum,
                             std::string name);

}  // namespace pagedgen
