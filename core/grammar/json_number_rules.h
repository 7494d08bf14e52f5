// The rules for JSON numbers and integers, in compact form (no '+', no leading zeros) and
// within what every common parser reads exactly: integers within 64 bits, numbers with a
// 64-bit integer part and an exponent of at most two digits (always a finite double).
// A bounded integer is spelled digit by digit within its range, so the bound holds for
// every output without a check after the fact.
#pragma once

#include <cstdint>
#include <string>

#include "grammar/grammar_builder.h"

namespace pagedgen {

// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9][0-9]?)?, the integer part within 64 bits.
RuleId add_json_number_rule(GrammarBuilder& builder, std::string name);

// The integers in [minimum, maximum] ("-0" never written).
RuleId add_json_integer_rule(GrammarBuilder& builder, int64_t minimum, int64_t maximum, std::string name);

}  // namespace pagedgen
