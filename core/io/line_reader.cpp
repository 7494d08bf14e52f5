#include "io/line_reader.h"

#include <cstring>

#include "util/error.h"

namespace pagedgen {

namespace {

constexpr std::size_t kReadChunkBytes = std::size_t{1} << 16;

}  // namespace

LineReader::LineReader(std::istream& input, std::size_t max_line_bytes)
    : input_(input), max_line_bytes_(max_line_bytes), buffer_(kReadChunkBytes) {
  PG_CHECK(max_line_bytes_ > 0, "max_line_bytes must be positive");
}

// Reads the next chunk into the buffer; false at the end of the input.
bool LineReader::refill() {
  if (at_eof_) return false;
  input_.read(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  const auto count = static_cast<std::size_t>(input_.gcount());
  if (input_.bad()) fail("reading the input failed after line {}: I/O error", next_number_);
  if (count < buffer_.size()) at_eof_ = true;
  begin_ = 0;
  end_ = count;
  return count > 0;
}

std::optional<Line> LineReader::next() {
  Line line;
  line.number = next_number_;
  bool any_bytes = false;  // whether this line exists at all (vs. the end of the input)
  char last_byte = 0;
  // Keep one byte past the limit: it may be the '\r' of a CRLF ending.
  const std::size_t keep_bytes = max_line_bytes_ + 1;
  for (;;) {
    if (begin_ == end_ && !refill()) {
      if (!any_bytes) return std::nullopt;
      break;  // last line without a newline
    }
    any_bytes = true;
    const char* start = buffer_.data() + begin_;
    const std::size_t available = end_ - begin_;
    const void* newline = std::memchr(start, '\n', available);
    const std::size_t piece = newline ? static_cast<std::size_t>(static_cast<const char*>(newline) - start) : available;
    if (piece > 0) last_byte = start[piece - 1];
    line.num_bytes += piece;
    if (line.text.size() < keep_bytes) line.text.append(start, std::min(piece, keep_bytes - line.text.size()));
    begin_ += piece;
    if (newline) {
      ++begin_;
      break;
    }
  }
  if (line.num_bytes > 0 && last_byte == '\r') {
    --line.num_bytes;
    if (line.text.size() > line.num_bytes) line.text.resize(line.num_bytes);
  }
  if (line.num_bytes > max_line_bytes_) {
    line.too_long = true;
    line.text.resize(max_line_bytes_);
  }
  ++next_number_;
  return line;
}

}  // namespace pagedgen
