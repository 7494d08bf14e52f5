#include "io/output_format.h"

#include <simdjson.h>

#include "io/openai_batch_output.h"
#include "io/plain_output.h"
#include "util/error.h"

namespace pagedgen {

std::string format_output_line(RequestFormat format, const OutputRecord& record, const RecordContext& context) {
  switch (format) {
    case RequestFormat::kPlain:
      return format_plain_line(record, context);
    case RequestFormat::kOpenAiBatch:
      return format_openai_batch_line(record, context);
  }
  PG_CHECK(false, "unknown RequestFormat {}", static_cast<int>(format));
  return "";
}

std::optional<OutputLineInfo> read_output_line(std::string_view line) {
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(line.data(), line.size()).get(object) != simdjson::SUCCESS) return std::nullopt;
  simdjson::dom::element error;
  const bool is_error = object["error"].get(error) == simdjson::SUCCESS && !error.is_null();
  uint64_t index = 0;
  if (object["index"].get(index) == simdjson::SUCCESS) return OutputLineInfo{index, is_error};
  std::string_view id;
  if (object["id"].get(id) != simdjson::SUCCESS) return std::nullopt;
  const std::optional<uint64_t> batch_index = openai_batch_line_index(id);
  if (!batch_index) return std::nullopt;
  return OutputLineInfo{*batch_index, is_error};
}

}  // namespace pagedgen
