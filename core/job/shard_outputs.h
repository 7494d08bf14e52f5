// The shard outputs `pagedgen merge` joins, read and checked in full before anything is
// written, so that a refused merge leaves an existing output as it was:
//   - each has the manifest of a finished run, with the record of what its output held then;
//   - they differ only in their shard, all K/N of one N (0 <= K < N), each K once, all N;
//   - a stream input (no fingerprint among the settings) was the same stream: each run
//     recorded its fingerprint as read;
//   - each output still holds what its run finished with (lines, size, hash), its lines in
//     input order, no input line answered twice.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/output_merge.h"

namespace pagedgen {

struct ShardOutputs {
  std::string job_key;  // io/manifest.h job_key
  uint64_t num_shards = 0;
  std::vector<MergeInput> inputs;  // as given, each with its manifest's record
  uint64_t num_lines = 0;          // lines they hold together
};

// Throws Error naming the file, what is wrong and what to do when a check fails.
ShardOutputs check_shard_outputs(const std::vector<std::filesystem::path>& outputs);

}  // namespace pagedgen
