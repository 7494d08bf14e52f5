// LineReader: streams a text input line by line with bounded memory, whatever its line
// endings (LF or CRLF) and whether or not the last line ends with a newline.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <vector>

namespace pagedgen {

struct Line {
  uint64_t number = 0;     // 0-based position among all lines of the input, blank ones included
  std::string text;        // without the line ending ("\n" or "\r\n")
  bool too_long = false;   // longer than max_line_bytes: `text` holds only its first bytes
  uint64_t num_bytes = 0;  // the line's full length in bytes, without the line ending
};

class LineReader {
 public:
  // Reads `input` from its current position; it must outlive the reader. Lines longer
  // than max_line_bytes are reported with too_long set and not kept whole in memory.
  explicit LineReader(std::istream& input, std::size_t max_line_bytes = kDefaultMaxLineBytes);

  // The next line, or nullopt at the end of the input. A final empty piece after the last
  // newline is not a line ("a\n" holds one line, "a\nb" two). Throws Error on a read error.
  std::optional<Line> next();

  static constexpr std::size_t kDefaultMaxLineBytes = std::size_t{256} << 20;  // 256 MiB

 private:
  bool refill();

  std::istream& input_;
  std::size_t max_line_bytes_;
  std::vector<char> buffer_;  // [buffer_size] bytes read and not yet consumed: [begin_, end_)
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  uint64_t next_number_ = 0;
  bool at_eof_ = false;
};

}  // namespace pagedgen
