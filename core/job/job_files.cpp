#include "job/job_files.h"

#include "util/error.h"
#include "util/posix_file.h"

namespace pagedgen {

void check_not_input(const std::filesystem::path& input, const std::filesystem::path& output) {
  const std::optional<FileStatus> in = file_status(input);
  if (!in) return;
  for (const std::filesystem::path& path : {output, manifest_path(output), journal_path(output)}) {
    const std::optional<FileStatus> out = file_status(path);
    if (out && out->identity == in->identity)
      fail(
          "the input '{}' and the output '{}' are one file: writing the output would destroy the input before it "
          "is read; give another output file",
          input.string(), path.string());
  }
}

namespace {

const std::filesystem::path& checked_output(const std::filesystem::path& input, const std::filesystem::path& output) {
  if (!input.empty()) check_not_input(input, output);
  return output;
}

}  // namespace

JobFiles::JobFiles(const std::filesystem::path& input, const std::filesystem::path& output, Manifest manifest,
                   bool resume, const OwnedLines& owned, double fsync_seconds)
    : path_(output),
      manifest_(std::move(manifest)),
      resume_requested_(resume),
      fsync_seconds_(fsync_seconds),
      lock_(checked_output(input, output)) {
  try {
    if (resume) resume_ = prepare_job_resume(output, manifest_, owned);
  } catch (...) {
    lock_.release_unstarted();
    throw;
  }
}

JobFiles::~JobFiles() {
  if (!started_) lock_.release_unstarted();
}

// A new job removes the old manifest first: a kill before the new one is written then
// leaves no manifest that vouches for an emptied or foreign output.
void JobFiles::start() {
  PG_CHECK(!started_ && !resume_.finished, "a job's files start once, and only when there is work");
  started_ = true;
  const bool resumed = resume_requested_;
  if (!resumed) remove_file_if_present(manifest_path(path_));
  if (resumed && resume_.num_torn_bytes > 0) cut_file(path_, resume_.num_output_bytes);
  output_.emplace(path_, !resumed, fsync_seconds_);
  journal_.emplace(journal_path(path_), resumed ? resume_.journal.num_valid_bytes : 0, fsync_seconds_);
  manifest_.finished = false;
  manifest_.output.reset();
  manifest_.input_read.reset();
  write_manifest(manifest_path(path_), manifest_);
}

void JobFiles::on_all_written() {
  output_->sync();
  journal_->clear();
}

void JobFiles::finish(bool finished, const std::optional<std::string>& input_read) {
  journal_->commit();
  output_->close();
  output_.reset();
  manifest_.finished = finished;
  if (finished) {
    manifest_.output = measure_output(path_);
    manifest_.input_read = input_read;
  }
  write_manifest(manifest_path(path_), manifest_);
  if (finished) journal_->remove();
  journal_.reset();
}

Error JobFiles::write_failure() const {
  PG_CHECK(write_failed(), "no write failure to describe");
  const bool output_failed = output_ && output_->failure();
  const uint64_t num_complete = resume_.num_output_lines + (output_ ? output_->num_complete_lines() : 0);
  return Error(fmt::format(
      "writing {} '{}' failed: {}; {} lines are complete in the output '{}' (a resumed run goes "
      "on after them, once there is room)",
      output_failed ? "the output file" : "the journal", output_failed ? path_.string() : journal_->path().string(),
      errno_text(output_failed ? *output_->failure() : *journal_->failure()), num_complete, path_.string()));
}

}  // namespace pagedgen
