#include "job/batch_job.h"

#include "io/request_reader.h"
#include "job/window_runner.h"
#include "util/error.h"
#include "util/file_fingerprint.h"

namespace pagedgen {

BatchJob::BatchJob(BatchJobSettings settings) : settings_(std::move(settings)) {
  const LineWindows& w = settings_.windows;
  PG_CHECK(w.window_lines > 0 && w.shard < w.num_shards, "windows of {} lines, shard {} of {}", w.window_lines,
           w.shard, w.num_shards);
  PG_CHECK(!settings_.input_path.empty() || settings_.input_stream, "no input");
  PG_CHECK(!settings_.output_path.empty() || settings_.output_stream, "no output");
  if (settings_.resume && (settings_.input_path.empty() || settings_.output_path.empty()))
    fail_setting("resume", "a stream cannot be checked or continued; give an input file and an output file");
  open_input();
  if (!settings_.output_path.empty()) open_output();
}

// Opened before anything slow (the model load), so that a wrong path fails at once.
void BatchJob::open_input() {
  if (settings_.input_path.empty()) return;
  input_file_.open(settings_.input_path, std::ios::binary);
  if (!input_file_) fail("cannot open the input file '{}'", settings_.input_path.string());
}

// The manifest: checked against the saved one on resume, then written unfinished. The
// window of the last line written is run again whole (its lines already written are not
// written twice), so that its prefix-cache figures match an uninterrupted run.
void BatchJob::open_output() {
  manifest_.emplace();
  manifest_->settings.emplace_back("input", settings_.input_path.empty() ? "standard input"
                                                                         : fingerprint_file(settings_.input_path));
  for (const auto& setting : settings_.manifest_settings) manifest_->settings.push_back(setting);
  if (settings_.resume) resume_ = prepare_job_resume(settings_.output_path, *manifest_);
  if (resume_.finished) return;
  if (resume_.last_written) settings_.windows.first_window = settings_.windows.window_of(*resume_.last_written);
  output_file_.emplace(settings_.output_path, !settings_.resume, settings_.fsync_seconds);
  write_manifest(manifest_path(settings_.output_path), *manifest_);
}

std::optional<uint64_t> BatchJob::count_requests() const {
  if (settings_.input_path.empty()) return std::nullopt;
  std::ifstream input(settings_.input_path, std::ios::binary);
  if (!input) fail("cannot open the input file '{}'", settings_.input_path.string());
  const LineWindows windows = settings_.windows;
  return count_selected_requests(input, [windows](uint64_t line) { return windows.owns(line); });
}

BatchJobResult BatchJob::run(Engine& engine, const PromptBuilder& builder, const BatchJobObserver& observer) {
  PG_CHECK(output_file_ || settings_.output_path.empty() || already_finished(), "a batch job runs once");
  BatchJobResult result;
  if (already_finished()) {
    result.any_line_failed = resume_.has_error_lines;
    return result;
  }
  std::istream& input = settings_.input_path.empty() ? *settings_.input_stream : input_file_;
  std::ostream& output = output_file_ ? output_file_->stream() : *settings_.output_stream;
  WindowRunner runner(input, output, settings_, settings_.windows, resume_.last_written);
  result.interrupted = !runner.run(engine, builder, observer);
  result.num_written_lines = runner.num_written();
  result.stats = RunStats{runner.job_stats(), engine.stats()};
  result.any_line_failed = result.stats.num_failed_requests() > 0 || resume_.has_error_lines;
  return finish_output(std::move(result));
}

// Flushes the output; a file is closed (fsynced) and its manifest says whether the job
// finished.
BatchJobResult BatchJob::finish_output(BatchJobResult result) {
  std::ostream& output = output_file_ ? output_file_->stream() : *settings_.output_stream;
  output.flush();
  if (!output) fail("writing the output failed (disk full?)");
  if (output_file_) {
    output_file_->close();
    output_file_.reset();
    manifest_->finished = !result.interrupted;
    write_manifest(manifest_path(settings_.output_path), *manifest_);
  }
  return result;
}

}  // namespace pagedgen
