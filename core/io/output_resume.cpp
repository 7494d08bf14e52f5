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

// Checks one complete line against the one before it and adds it to `point`.
void add_line(const Line& line, const std::filesystem::path& output, const OwnedLines& owned, ResumePoint& point) {
  const std::optional<OutputLineInfo> info = read_output_line(line.text);
  if (!info)
    fail("line {} of '{}' is not a pagedgen output line; it cannot be resumed (run without resuming to start over)",
         line.number + 1, output.string());
  if (point.last_index && info->index <= *point.last_index)
    fail(
        "line {} of '{}' answers input line {} after input line {}: the output is not in input order (did two "
        "processes write it at once?); it cannot be resumed (run without resuming to start over)",
        line.number + 1, output.string(), info->index, *point.last_index);
  if (owned && !owned(info->index))
    fail(
        "line {} of '{}' answers input line {}, which is not among this run's lines (another shard's output?); it "
        "cannot be resumed (run without resuming to start over)",
        line.number + 1, output.string(), info->index);
  point.last_index = info->index;
  point.has_error_lines |= info->is_error;
  ++point.num_lines;
}

}  // namespace

ResumePoint read_resume_point(const std::filesystem::path& output, const OwnedLines& owned) {
  ResumePoint point;
  std::ifstream file(output, std::ios::binary);
  if (!file) fail("cannot open the output file '{}' to resume it", output.string());
  const uint64_t size = std::filesystem::file_size(output);
  const std::optional<uint64_t> last_newline = last_newline_before(file, size);
  point.num_kept_bytes = last_newline ? *last_newline + 1 : 0;
  point.num_torn_bytes = size - point.num_kept_bytes;
  file.clear();
  file.seekg(0);
  LineReader lines(file);
  // The reader hands the torn tail over as a last line without its newline: skip it.
  for (std::optional<Line> line = lines.next(); line;) {
    std::optional<Line> next = lines.next();
    if (!next && point.num_torn_bytes > 0) break;
    add_line(*line, output, owned, point);
    line = std::move(next);
  }
  return point;
}

ResumePoint prepare_resume(const std::filesystem::path& output, const OwnedLines& owned) {
  const ResumePoint point = read_resume_point(output, owned);
  if (point.num_torn_bytes > 0) cut_file(output, point.num_kept_bytes);
  return point;
}

void cut_file(const std::filesystem::path& output, uint64_t num_bytes) {
  std::error_code error;
  std::filesystem::resize_file(output, num_bytes, error);
  if (error) fail("cannot cut '{}' to its {} complete bytes: {}", output.string(), num_bytes, error.message());
}

}  // namespace pagedgen
