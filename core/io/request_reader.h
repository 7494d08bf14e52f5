// RequestReader: streams a JSONL input and yields, in input order, one Request or
// RequestError per non-blank line; blank (whitespace-only) lines are skipped and counted.
// One bad line never stops the read.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>

#include "io/line_reader.h"
#include "io/request.h"
#include "io/request_parser.h"

namespace pagedgen {

class RequestReader {
 public:
  // `input` must outlive the reader. A UTF-8 byte-order mark at the start is skipped.
  // Throws Error when `defaults` are invalid.
  RequestReader(std::istream& input, const SamplingParams& defaults,
                RequestFormat format = RequestFormat::kPlain,
                std::size_t max_line_bytes = LineReader::kDefaultMaxLineBytes);

  // The next non-blank line's item, or nullopt at the end of the input. Throws Error only
  // when the input cannot be read (I/O error).
  std::optional<RequestItem> next();

  uint64_t num_lines() const { return num_lines_; }              // read so far, blank ones included
  uint64_t num_blank_lines() const { return num_blank_lines_; }  // skipped so far

 private:
  LineReader lines_;
  RequestParser parser_;
  uint64_t num_lines_ = 0;
  uint64_t num_blank_lines_ = 0;
};

}  // namespace pagedgen
