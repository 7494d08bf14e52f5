// RequestReader: streams a JSONL input and yields, in input order, one Request or
// RequestError per non-blank selected line; blank (whitespace-only) lines are skipped and
// counted, lines outside the selection are skipped unparsed. One bad line never stops the
// read. The input format is given, or detected from the first non-blank line of the input.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <optional>

#include "io/line_reader.h"
#include "io/request.h"
#include "io/request_parser.h"
#include "util/stop_token.h"

namespace pagedgen {

// Which lines (by 0-based line number) a run reads; an empty function selects every line.
using LineSelection = std::function<bool(uint64_t line_number)>;

class RequestReader {
 public:
  // `input` must outlive the reader. A UTF-8 byte-order mark at the start is skipped.
  // `format`: nullopt detects it from the first non-blank line that is a JSON object
  // (detect_request_format), whether or not that line is selected; the lines before it are
  // error records. Throws Error when `defaults` are invalid.
  RequestReader(std::istream& input, const SamplingParams& defaults,
                std::optional<RequestFormat> format = RequestFormat::kPlain,
                std::size_t max_line_bytes = LineReader::kDefaultMaxLineBytes, LineSelection selection = {});

  // The next non-blank selected line's item, or nullopt at the end of the input. Throws
  // Error only when the input cannot be read (I/O error); Stopped when `stop` asks, while
  // lines are skipped or while one is parsed (request_parser.h).
  std::optional<RequestItem> next(const StopToken& stop = {});

  // The format in use; nullopt while it is still to be detected (no JSON object line yet).
  std::optional<RequestFormat> format() const { return format_; }
  uint64_t num_lines() const { return num_lines_; }              // selected lines read so far, blank ones included
  uint64_t num_blank_lines() const { return num_blank_lines_; }  // selected lines skipped as blank

 private:
  LineReader lines_;
  SamplingParams defaults_;
  LineSelection selection_;
  std::optional<RequestFormat> format_;
  std::optional<RequestParser> parser_;  // made once the format is known
  uint64_t num_lines_ = 0;
  uint64_t num_blank_lines_ = 0;
};

// How many items a RequestReader with this selection would yield: the non-blank selected
// lines of `input`, read to its end (for a progress total). Throws Stopped when `stop` asks.
uint64_t count_selected_requests(std::istream& input, const LineSelection& selection, const StopToken& stop = {});

}  // namespace pagedgen
