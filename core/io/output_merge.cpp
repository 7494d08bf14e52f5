#include "io/output_merge.h"

#include <fstream>
#include <memory>
#include <optional>
#include <queue>

#include "io/line_reader.h"
#include "io/output_format.h"
#include "util/error.h"
#include "util/hashing_streambuf.h"

namespace pagedgen {

namespace {

// One input file, positioned on its next line; its bytes hashed as they are read.
struct Cursor {
  MergeInput input;
  std::ifstream file;
  HashingStreambuf hashed;
  std::istream stream;
  LineReader lines;
  std::optional<Line> line;
  uint64_t index = 0;  // the input line `line` answers
  uint64_t num_lines = 0;

  explicit Cursor(const MergeInput& in)
      : input(in), file(in.path, std::ios::binary), hashed(*file.rdbuf()), stream(&hashed), lines(stream) {
    if (!file) fail("cannot open the shard output '{}'", in.path.string());
  }

  // Moves to the next line; false at the end of the file.
  bool advance() {
    const std::optional<uint64_t> previous = line ? std::optional<uint64_t>(index) : std::nullopt;
    line = lines.next();
    if (!line) return check_end();
    ++num_lines;
    const std::optional<OutputLineInfo> answered = read_output_line(line->text);
    if (!answered)
      fail(
          "line {} of '{}' is not a pagedgen output line (torn by an interruption, or changed since): resume that "
          "shard if its run was interrupted, or run it again",
          line->number + 1, input.path.string());
    if (previous && answered->index <= *previous)
      fail("line {} of '{}' answers input line {} after input line {}: not a pagedgen output file in input order",
           line->number + 1, input.path.string(), answered->index, *previous);
    index = answered->index;
    return true;
  }

  // At the end: the file holds what its run finished with.
  bool check_end() const {
    if (!input.expected) return false;
    const OutputCoverage now{num_lines, hashed.num_bytes(), hashed.hash()};
    if (const std::optional<std::string> change = describe_coverage_change(*input.expected, now))
      fail(
          "the shard output '{}' changed after its run finished ({}): lines were lost or altered; run that shard "
          "again (generate --shard ... without --resume) before merging",
          input.path.string(), *change);
    return false;
  }
};

}  // namespace

uint64_t merge_outputs(const std::vector<std::filesystem::path>& inputs, std::ostream& out) {
  std::vector<MergeInput> unchecked;
  for (const auto& path : inputs) unchecked.push_back({path, std::nullopt});
  return merge_outputs(unchecked, &out);
}

uint64_t merge_outputs(const std::vector<MergeInput>& inputs, std::ostream* out) {
  std::vector<std::unique_ptr<Cursor>> cursors;
  const auto later = [](const Cursor* a, const Cursor* b) { return a->index > b->index; };
  std::priority_queue<Cursor*, std::vector<Cursor*>, decltype(later)> next(later);  // smallest index on top
  for (const MergeInput& input : inputs) {
    cursors.push_back(std::make_unique<Cursor>(input));
    if (cursors.back()->advance()) next.push(cursors.back().get());
  }
  uint64_t num_lines = 0;
  std::optional<uint64_t> last_index;
  const Cursor* last = nullptr;  // the file of last_index (it has moved on since)
  while (!next.empty()) {
    Cursor* cursor = next.top();
    next.pop();
    if (last_index && cursor->index == *last_index)
      fail("input line {} is answered in both '{}' and '{}': give each shard once", cursor->index,
           last->input.path.string(), cursor->input.path.string());
    last_index = cursor->index;
    if (out) {
      out->write(cursor->line->text.data(), static_cast<std::streamsize>(cursor->line->text.size()));
      out->put('\n');
    }
    ++num_lines;
    last = cursor;
    if (cursor->advance()) next.push(cursor);
  }
  if (out && !out->flush())
    fail("writing the merged output failed after {} lines (disk full or closed pipe?)", num_lines);
  return num_lines;
}

}  // namespace pagedgen
