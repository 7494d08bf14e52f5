// UnsupportedSchemaError: a schema structured outputs refuse to compile because of what the
// engine does not do (a keyword or form it cannot enforce, a size past its limits), as
// opposed to a schema that is malformed or that no value satisfies (a plain Error). The
// request readers answer the first with unsupported_field, the second with invalid_value.
#pragma once

#include <fmt/format.h>

#include <string>

#include "util/error.h"

namespace pagedgen {

class UnsupportedSchemaError : public Error {
 public:
  explicit UnsupportedSchemaError(const std::string& message) : Error(message) {}
};

// Throws UnsupportedSchemaError with a fmt-formatted message (naming the keyword and where).
template <typename... Args>
[[noreturn]] void refuse_schema(fmt::format_string<Args...> format, Args&&... args) {
  throw UnsupportedSchemaError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace pagedgen
