// Output line formats: each input format answers in its own (plain_output.h,
// openai_batch_output.h), and either kind of line can be read back for the input line it
// answers, which is what --resume and `pagedgen merge` need.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "io/output_record.h"
#include "io/request_parser.h"

namespace pagedgen {

// The output line of `record` (without its newline) in the format that answers `format`.
std::string format_output_line(RequestFormat format, const OutputRecord& record, const RecordContext& context);

// What a written output line says of itself.
struct OutputLineInfo {
  uint64_t index = 0;     // the input line it answers: the plain "index", or N of "id": "batch_req_N"
  bool is_error = false;  // an error line (plain: an "error" field; OpenAI: a non-null "error")
};

// nullopt when `line` is not a complete output line of either format (e.g. one torn by a crash).
std::optional<OutputLineInfo> read_output_line(std::string_view line);

}  // namespace pagedgen
