#include "io/output_merge.h"

#include <fstream>
#include <memory>
#include <optional>
#include <queue>

#include "io/line_reader.h"
#include "io/output_format.h"
#include "util/error.h"

namespace pagedgen {

namespace {

// One input file, positioned on its next line.
struct Cursor {
  std::filesystem::path path;
  std::ifstream file;
  LineReader lines;
  std::optional<Line> line;
  uint64_t index = 0;  // the input line `line` answers

  explicit Cursor(const std::filesystem::path& p) : path(p), file(p, std::ios::binary), lines(file) {
    if (!file) fail("cannot open the shard output '{}'", p.string());
  }

  // Moves to the next line; false at the end of the file.
  bool advance() {
    const std::optional<uint64_t> previous = line ? std::optional<uint64_t>(index) : std::nullopt;
    line = lines.next();
    if (!line) return false;
    const std::optional<OutputLineInfo> answered = read_output_line(line->text);
    if (!answered)
      fail("line {} of '{}' is not a pagedgen output line (a torn line? resume that shard first)", line->number + 1,
           path.string());
    if (previous && answered->index <= *previous)
      fail("line {} of '{}' answers input line {} after input line {}: not a pagedgen output file in input order",
           line->number + 1, path.string(), answered->index, *previous);
    index = answered->index;
    return true;
  }
};

}  // namespace

uint64_t merge_outputs(const std::vector<std::filesystem::path>& inputs, std::ostream& out) {
  std::vector<std::unique_ptr<Cursor>> cursors;
  const auto later = [](const Cursor* a, const Cursor* b) { return a->index > b->index; };
  std::priority_queue<Cursor*, std::vector<Cursor*>, decltype(later)> next(later);  // smallest index on top
  for (const auto& path : inputs) {
    cursors.push_back(std::make_unique<Cursor>(path));
    if (cursors.back()->advance()) next.push(cursors.back().get());
  }
  uint64_t num_lines = 0;
  std::optional<uint64_t> last_index;
  std::filesystem::path last_path;
  while (!next.empty()) {
    Cursor* cursor = next.top();
    next.pop();
    if (last_index && cursor->index == *last_index)
      fail("input line {} is answered in both '{}' and '{}': give each shard once", cursor->index, last_path.string(),
           cursor->path.string());
    last_index = cursor->index;
    last_path = cursor->path;
    out.write(cursor->line->text.data(), static_cast<std::streamsize>(cursor->line->text.size()));
    out.put('\n');
    ++num_lines;
    if (cursor->advance()) next.push(cursor);
  }
  out.flush();
  if (!out) fail("writing the merged output failed after {} lines (disk full or closed pipe?)", num_lines);
  return num_lines;
}

}  // namespace pagedgen
