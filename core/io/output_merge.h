// Joins the output files of shards (`generate --shard K/N`) back into one file in input
// order: a k-way merge on the input line each output line answers (output_format.h).
//   shard 0: lines 0 1 2 | 6 7 8        merged: 0 1 2 3 4 5 6 7 8 ...
//   shard 1: lines 3 4 5 | 9 ...
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <vector>

#include "io/output_coverage.h"

namespace pagedgen {

// One shard output, and what it must hold (its manifest's record), checked at its end.
struct MergeInput {
  std::filesystem::path path;
  std::optional<OutputCoverage> expected;  // nullopt: not checked
};

// Writes every line of `inputs` to `out`, ordered by input line; returns the number of
// lines. Throws Error, naming the file and line, when a line is not an output line, when a
// file's lines are not in increasing input order, or when two lines answer the same input
// line (the same shard given twice, or overlapping shards).
uint64_t merge_outputs(const std::vector<std::filesystem::path>& inputs, std::ostream& out);

// The same, and each file must hold its `expected` lines, bytes and hash (Error naming the
// file and both otherwise). With `out` null nothing is written: a check before writing, so
// that a refused merge leaves an existing output as it was.
uint64_t merge_outputs(const std::vector<MergeInput>& inputs, std::ostream* out);

}  // namespace pagedgen
