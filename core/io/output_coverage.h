// OutputCoverage: what an output file held when its run finished: its number of lines, its
// size and a hash of its bytes. The manifest records it then (io/manifest.h); --resume and
// merge measure the file again and refuse it when anything differs, so an output that lost
// whole lines since (cut at a line boundary, or a line replaced by one claiming a later
// input line) is noticed, though its lines alone still look like an output in input order
// (index gaps are normal there: blank lines and other shards' lines are not answered).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace pagedgen {

struct OutputCoverage {
  uint64_t num_lines = 0;  // as io/line_reader.h counts them (a torn last line counts)
  uint64_t num_bytes = 0;
  uint64_t hash = 0;  // FNV-1a of every byte, finalized (util/file_fingerprint.h)

  bool operator==(const OutputCoverage&) const = default;
  // "12 lines, 3456 bytes, fnv1a64 0123456789abcdef"
  std::string describe() const;
};

// Measures `output` (one pass over it). Throws Error naming the file when it cannot be read.
OutputCoverage measure_output(const std::filesystem::path& output);

// nullopt when `now` is `recorded`; otherwise what differs, for a message:
// "it holds 9 lines, 812 bytes, fnv1a64 ...; its run finished with 10 lines, 905 bytes, fnv1a64 ..."
std::optional<std::string> describe_coverage_change(const OutputCoverage& recorded, const OutputCoverage& now);

}  // namespace pagedgen
