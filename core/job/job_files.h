// JobFiles: the files of a batch job whose output is a regular file: the output, locked
// for the whole run (io/output_lock.h), the manifest and the journal beside it. Opening
// checks everything and changes nothing but the lock, so that a job that fails before it
// starts (a model that cannot load, a bad setting) leaves no file behind:
//
//   JobFiles files(...);     // same-file checks, lock, resume checks     (before the model load)
//   files.start();           // new: manifest removed, output and journal emptied, manifest written
//                            // resumed: torn tails cut, manifest written
//   ... output(), journal(), on_all_written() after each window ...
//   files.finish(finished);  // output fsynced and closed, manifest says whether it finished
//                            // and, when it did, what the output holds (io/output_coverage.h)
//                            // and a stream input's fingerprint; the journal removed
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>

#include "io/durable_output.h"
#include "io/manifest.h"
#include "io/output_lock.h"
#include "job/job_resume.h"
#include "job/run_journal.h"
#include "util/error.h"

namespace pagedgen {

class JobFiles {
 public:
  // `input` is the input file's path (empty for a stream). Throws Error when the input and
  // an output file are one file, or another process writes the output; SettingError
  // ("resume") when the output cannot be resumed (job_resume.h).
  JobFiles(const std::filesystem::path& input, const std::filesystem::path& output, Manifest manifest, bool resume,
           const OwnedLines& owned, double fsync_seconds);
  ~JobFiles();  // a job that never started removes the output its lock created
  JobFiles(const JobFiles&) = delete;
  JobFiles& operator=(const JobFiles&) = delete;

  const ResumeState& resume_state() const { return resume_; }
  const Manifest& manifest() const { return manifest_; }

  void start();
  std::ostream& output() { return output_->stream(); }
  JournalWriter& journal() { return *journal_; }
  // Every line so far is in the output: fsync it, then empty the journal.
  void on_all_written();
  // `input_read`: a stream input's fingerprint as read (util/hashing_streambuf.h), recorded
  // when the run finished; nullopt for a file, whose fingerprint is a setting.
  void finish(bool finished, const std::optional<std::string>& input_read = std::nullopt);
  // A write or fsync of the output or the journal failed (a full disk)...
  bool write_failed() const { return (output_ && output_->failure()) || (journal_ && journal_->failure()); }
  // ... and the Error that says so: which file, why, and the lines complete in the output.
  Error write_failure() const;

 private:
  std::filesystem::path path_;
  Manifest manifest_;
  bool resume_requested_;
  double fsync_seconds_;
  ResumeState resume_;
  OutputLock lock_;
  bool started_ = false;
  std::optional<DurableOutput> output_;
  std::optional<JournalWriter> journal_;
};

// Throws Error when `input` and the output (or its manifest or journal) are one file: the
// output would be emptied before the input is read.
void check_not_input(const std::filesystem::path& input, const std::filesystem::path& output);

}  // namespace pagedgen
