#include "io/request_reader.h"

#include <fmt/format.h>

namespace pagedgen {

namespace {

// JSON's whitespace; '\r' also covers a stray CR that was not part of a CRLF.
bool is_blank(std::string_view text) {
  return text.find_first_not_of(" \t\r") == std::string_view::npos;
}

constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

}  // namespace

RequestReader::RequestReader(std::istream& input, const SamplingParams& defaults,
                             RequestFormat format, std::size_t max_line_bytes)
    : lines_(input, max_line_bytes), parser_(format, defaults) {}

std::optional<RequestItem> RequestReader::next() {
  while (std::optional<Line> line = lines_.next()) {
    ++num_lines_;
    std::string_view text = line->text;
    if (line->number == 0 && text.starts_with(kUtf8ByteOrderMark)) text.remove_prefix(kUtf8ByteOrderMark.size());
    if (line->too_long)
      return RequestError{line->number, std::nullopt, std::string(request_error::kLineTooLong),
                          fmt::format("the line is {} bytes, over the limit of {} bytes", line->num_bytes,
                                      line->text.size())};
    if (is_blank(text)) {
      ++num_blank_lines_;
      continue;
    }
    return parser_.parse(text, line->number);
  }
  return std::nullopt;
}

}  // namespace pagedgen
