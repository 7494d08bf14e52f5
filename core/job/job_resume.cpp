#include "job/job_resume.h"

#include <string>

#include "io/output_format.h"
#include "util/error.h"
#include "util/posix_file.h"

namespace pagedgen {

namespace {

// The saved manifest must be this version's and list this run's settings.
void check_manifest(const std::filesystem::path& output, const Manifest& saved, const Manifest& now) {
  if (saved.version < kManifestVersion)
    fail_setting("resume",
                 "'{}' was written by an older pagedgen (manifest version {}), whose fingerprint of the model covered "
                 "only its first 8 MiB, so it cannot tell whether the weights are the same; run again without "
                 "resuming to start over",
                 output.string(), saved.version);
  if (const std::optional<std::string> difference = describe_difference(saved, now))
    fail_setting("resume",
                 "'{}' was written with other settings ({}); give the same input, model and settings, or run again "
                 "without resuming to start over",
                 output.string(), *difference);
}

// The journal's entries for lines after the output's last one, and of this run's lines.
JournalContents journal_after(const std::filesystem::path& output, const ResumeState& state, const OwnedLines& owned) {
  JournalContents journal = read_journal(journal_path(output));
  const auto stale = [&](uint64_t line) { return state.in_output(line) || (owned && !owned(line)); };
  std::erase_if(journal.lines, [&](const auto& entry) { return stale(entry.first); });
  std::erase_if(journal.cached_tokens, [&](const auto& entry) { return stale(entry.first); });
  return journal;
}

// A finished output must still hold what its run finished with (lines, size, hash): one cut
// at a line boundary, or with a line replaced by one claiming a later input line, looks
// like a complete output in input order, and resuming it would lose the missing lines.
void check_finished_output(const std::filesystem::path& output, const Manifest& saved) {
  if (!saved.finished || !saved.output) return;
  const OutputCoverage now = file_status(output) ? measure_output(output) : OutputCoverage{};
  if (const std::optional<std::string> change = describe_coverage_change(*saved.output, now))
    fail_setting("resume",
                 "'{}' changed after its run finished ({}): lines were lost or altered, so resuming it could leave "
                 "input lines unanswered; restore the file, or run again without resuming to start over",
                 output.string(), *change);
}

}  // namespace

ResumeState prepare_job_resume(const std::filesystem::path& output, const Manifest& manifest, const OwnedLines& owned) {
  const std::optional<Manifest> saved = read_manifest(manifest_path(output));
  const std::optional<FileStatus> output_status = file_status(output);
  if (!saved) {
    if (output_status && output_status->num_bytes > 0)
      fail_setting("resume",
                   "'{}' has no manifest '{}', so nothing tells which settings wrote it; run again without resuming "
                   "to start over",
                   output.string(), manifest_path(output).string());
    return {};
  }
  check_manifest(output, *saved, manifest);
  check_finished_output(output, *saved);
  ResumeState state;
  state.finished = saved->finished;
  if (output_status) {
    try {
      const ResumePoint point = read_resume_point(output, owned);
      state.last_written = point.last_index;
      state.num_output_lines = point.num_lines;
      state.num_output_bytes = point.num_kept_bytes;
      state.num_torn_bytes = point.num_torn_bytes;
      state.has_error_lines = point.has_error_lines;
    } catch (const Error& error) {
      throw SettingError("resume", error.what());
    }
  }
  // A finished output torn afterwards lacks its last line: not finished any more (only a
  // manifest of pagedgen before the output record gets here with a torn output).
  state.finished = state.finished && state.num_torn_bytes == 0;
  if (state.finished) return state;
  state.journal = journal_after(output, state, owned);
  for (const auto& [line, text] : state.journal.lines) state.has_error_lines |= read_output_line(text)->is_error;
  return state;
}

}  // namespace pagedgen
