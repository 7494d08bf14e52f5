#include "io/request_reader.h"

#include <fmt/format.h>

namespace pagedgen {

namespace {

// JSON's whitespace; '\r' also covers a stray CR that was not part of a CRLF.
bool is_blank(std::string_view text) { return text.find_first_not_of(" \t\r") == std::string_view::npos; }

constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

// The line's text, without a byte-order mark at the start of the input.
std::string_view content(const Line& line) {
  std::string_view text = line.text;
  if (line.number == 0 && text.starts_with(kUtf8ByteOrderMark)) text.remove_prefix(kUtf8ByteOrderMark.size());
  return text;
}

}  // namespace

RequestReader::RequestReader(std::istream& input, const SamplingParams& defaults, std::optional<RequestFormat> format,
                             std::size_t max_line_bytes, LineSelection selection)
    : lines_(input, max_line_bytes), defaults_(defaults), selection_(std::move(selection)), format_(format) {
  validate(defaults_);
  if (format_) parser_.emplace(*format_, defaults_);
}

std::optional<RequestItem> RequestReader::next(const StopToken& stop) {
  StopPoll poll(stop);  // lines skipped unparsed may be millions (a resume, a shard)
  while (std::optional<Line> line = lines_.next()) {
    poll.tick();
    const std::string_view text = content(*line);
    if (!format_ && !is_blank(text)) {
      format_ = detect_request_format(text);
      if (format_) parser_.emplace(*format_, defaults_);
    }
    if (selection_ && !selection_(line->number)) continue;
    ++num_lines_;
    if (line->too_long)
      return RequestError{
          line->number, std::nullopt, std::string(request_error::kLineTooLong),
          fmt::format("the line is {} bytes, over the limit of {} bytes", line->num_bytes, line->text.size())};
    if (is_blank(text)) {
      ++num_blank_lines_;
      continue;
    }
    // Before the format is known the line is no JSON object, an error in either format.
    stop.throw_if_stopped();
    if (!parser_) return RequestParser(RequestFormat::kPlain, defaults_).parse(text, line->number, stop);
    return parser_->parse(text, line->number, stop);
  }
  return std::nullopt;
}

uint64_t count_selected_requests(std::istream& input, const LineSelection& selection, const StopToken& stop) {
  LineReader lines(input);
  StopPoll poll(stop);
  uint64_t count = 0;
  while (std::optional<Line> line = lines.next()) {
    poll.tick();
    if ((!selection || selection(line->number)) && !is_blank(content(*line))) ++count;
  }
  return count;
}

}  // namespace pagedgen
