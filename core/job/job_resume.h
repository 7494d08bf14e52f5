// Where a resumed batch job goes on: the manifest beside the output must list the same
// settings as this run's, the output's complete lines must be this run's lines in input
// order, and the journal beside it (job/run_journal.h) adds the requests that finished
// out of order. Nothing is changed here: the job cuts the torn tails when it starts.
//
//   output:  lines 0 1 2 4 | torn          journal: l 7, l 9, a 5 (cached 32), a 8 (cached 0)
//   resumed: 5 6 8 computed (5 and 8 report the cached tokens of their first start),
//            7 9 taken from the journal, then the lines after 9
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "io/manifest.h"
#include "io/output_resume.h"
#include "job/run_journal.h"

namespace pagedgen {

struct ResumeState {
  std::optional<uint64_t> last_written;  // input line of the output's last complete line; nullopt: none
  uint64_t num_output_lines = 0;         // complete lines in the output
  uint64_t num_output_bytes = 0;         // their bytes (the output is cut to them)
  uint64_t num_torn_bytes = 0;           // after them, cut off
  JournalContents journal;               // entries for lines after last_written
  bool has_error_lines = false;          // among the lines kept (the exit code covers the whole file)
  bool finished = false;                 // the interrupted run had in fact finished

  // Requests answered before this run: the output's lines and the journal's.
  uint64_t num_earlier_requests() const { return num_output_lines + journal.lines.size(); }
  bool in_output(uint64_t line) const { return last_written && line <= *last_written; }
};

// Checks the manifest beside `output` against `manifest` and reads the output and the
// journal. Throws SettingError("resume") when the output cannot be resumed (no manifest
// beside a non-empty output, a manifest of an older pagedgen, other settings, a finished
// output that no longer holds what its run finished with, lines out of order or of other
// shards), and Error when a file cannot be read.
ResumeState prepare_job_resume(const std::filesystem::path& output, const Manifest& manifest, const OwnedLines& owned);

}  // namespace pagedgen
