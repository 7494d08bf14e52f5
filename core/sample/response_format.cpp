#include "sample/response_format.h"

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
  }
  PG_CHECK(false, "unknown ResponseFormat::Type {}", static_cast<int>(type));
  return {};
}

}  // namespace pagedgen
