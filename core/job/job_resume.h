// Where a resumed batch job goes on: the manifest beside the output must list the same
// settings as this run's, and the output's torn last line (left by a kill or a crash) is
// cut off; the job then goes on after the last complete line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "io/manifest.h"

namespace pagedgen {

struct ResumeState {
  std::optional<uint64_t> last_written;  // input line of the last complete output line; nullopt: none
  bool has_error_lines = false;          // among the lines kept (the exit code covers the whole file)
  bool finished = false;                 // the interrupted run had in fact finished
  uint64_t num_torn_bytes = 0;           // cut off the end of the output
};

// Checks the manifest beside `output` against `manifest` and cuts a torn last line. Throws
// SettingError("resume") when the output cannot be resumed (no manifest beside a non-empty
// output, or other settings), and Error when the output is not pagedgen's.
ResumeState prepare_job_resume(const std::filesystem::path& output, const Manifest& manifest);

}  // namespace pagedgen
