#include "io/output_resume.h"

#include <fstream>
#include <vector>

#include "io/line_reader.h"
#include "io/output_format.h"
#include "util/error.h"

namespace pagedgen {

namespace {

constexpr uint64_t kScanChunkBytes = uint64_t{1} << 16;

// Position of the last '\n' in bytes [0, end) of `file`, scanning backwards by chunks.
std::optional<uint64_t> last_newline_before(std::ifstream& file, uint64_t end) {
  std::vector<char> chunk(kScanChunkBytes);
  while (end > 0) {
    const uint64_t begin = end > kScanChunkBytes ? end - kScanChunkBytes : 0;
    file.seekg(static_cast<std::streamoff>(begin));
    file.read(chunk.data(), static_cast<std::streamsize>(end - begin));
    if (!file) fail("reading the output file failed while looking for its last line");
    for (uint64_t i = end; i > begin; --i)
      if (chunk[i - 1 - begin] == '\n') return i - 1;
    end = begin;
  }
  return std::nullopt;
}

}  // namespace

ResumePoint prepare_resume(const std::filesystem::path& output) {
  ResumePoint point;
  {
    std::ifstream file(output, std::ios::binary);
    if (!file) fail("cannot open the output file '{}' to resume it", output.string());
    const uint64_t size = std::filesystem::file_size(output);
    const std::optional<uint64_t> last_newline = last_newline_before(file, size);
    point.num_torn_bytes = size - (last_newline ? *last_newline + 1 : 0);
  }
  if (point.num_torn_bytes > 0)
    std::filesystem::resize_file(output, std::filesystem::file_size(output) - point.num_torn_bytes);
  std::ifstream file(output, std::ios::binary);
  LineReader lines(file);
  while (const std::optional<Line> line = lines.next()) {
    const std::optional<OutputLineInfo> info = read_output_line(line->text);
    if (!info)
      fail("line {} of '{}' is not a pagedgen output line; it cannot be resumed (run without --resume to start over)",
           line->number + 1, output.string());
    point.last_index = info->index;
    point.has_error_lines |= info->is_error;
    ++point.num_lines;
  }
  return point;
}

}  // namespace pagedgen
