#include "job/batch_job.h"

#include "io/request_reader.h"
#include "job/window_runner.h"
#include "util/error.h"
#include "util/file_fingerprint.h"
#include "util/hashing_streambuf.h"
#include "util/posix_file.h"

namespace pagedgen {

BatchJob::BatchJob(BatchJobSettings settings, StopToken stop) : settings_(std::move(settings)), stop_(stop) {
  const LineWindows& w = settings_.windows;
  PG_CHECK(w.window_lines > 0 && w.shard < w.num_shards, "windows of {} lines, shard {} of {}", w.window_lines, w.shard,
           w.num_shards);
  PG_CHECK(!settings_.input_path.empty() || settings_.input_stream, "no input");
  PG_CHECK(!settings_.output_path.empty() || settings_.output_stream, "no output");
  open_input();
  open_output();
}

// Opened before anything slow (the model load), so that a wrong path fails at once.
void BatchJob::open_input() {
  const std::filesystem::path& path = settings_.input_path;
  input_is_stream_ = path.empty();
  if (path.empty()) return;
  if (const std::optional<std::string> why = why_unreadable(path))
    fail("cannot open the input file '{}': {}", path.string(), *why);
  const std::optional<FileStatus> status = file_status(path);
  input_is_stream_ = !status || !status->is_regular;  // a FIFO or a device: read once
  input_file_.open(path, std::ios::binary);
  if (!input_file_) fail("cannot open the input file '{}': {}", path.string(), errno_text(errno));
}

// A regular output file gets the lock, the manifest and the journal (job_files.h); the
// input is scanned once for its fingerprint and its length (shards split small inputs
// by lines).
void BatchJob::open_output() {
  const std::filesystem::path& path = settings_.output_path;
  const std::optional<FileStatus> status = path.empty() ? std::nullopt : file_status(path);
  const bool file_output = !path.empty() && (!status || status->is_regular);
  const bool resumable = file_output && !input_is_stream_;
  if (settings_.resume && !resumable)
    fail_setting("resume", "a stream cannot be checked or continued; give an input file and an output file");
  std::optional<std::string> input_fingerprint;
  if (!input_is_stream_ && (file_output || settings_.windows.num_shards > 1)) {
    const FileScan scan = scan_file(settings_.input_path, stop_);
    input_fingerprint = scan.fingerprint();
    settings_.windows.num_input_lines = scan.num_lines;
  }
  Manifest manifest = make_manifest(input_fingerprint);
  job_key_ = job_key(manifest);
  if (path.empty()) return;
  if (!file_output) {
    output_device_.emplace(path, std::ios::binary);
    if (!*output_device_) fail("cannot open the output '{}': {}", path.string(), errno_text(errno));
    return;
  }
  const LineWindows windows = settings_.windows;
  files_.emplace(
      input_is_stream_ ? std::filesystem::path() : settings_.input_path, path, std::move(manifest), settings_.resume,
      [windows](uint64_t line) { return windows.owns(line); }, settings_.fsync_seconds);
}

Manifest BatchJob::make_manifest(const std::optional<std::string>& input_fingerprint) const {
  Manifest manifest;
  const std::string input = input_fingerprint              ? *input_fingerprint
                            : settings_.input_path.empty() ? "standard input"
                            : input_is_stream_             ? "stream " + settings_.input_path.string()
                                               : "file " + settings_.input_path.string() + ", not fingerprinted";
  manifest.settings.emplace_back("input", input);
  for (const auto& setting : settings_.manifest_settings) manifest.settings.push_back(setting);
  return manifest;
}

namespace {

// The whole stream's fingerprint once the run finished (the rest of it read first); nullopt
// for a file input or an interrupted run.
std::optional<std::string> read_fingerprint(std::optional<HashingStreambuf>& hashed, bool interrupted) {
  if (!hashed || interrupted) return std::nullopt;
  hashed->drain();
  return hashed->fingerprint();
}

}  // namespace

const ResumeState& BatchJob::resume_state() const {
  static const ResumeState kNone;
  return files_ ? files_->resume_state() : kNone;
}

std::optional<uint64_t> BatchJob::count_requests() const {
  if (input_is_stream_) return std::nullopt;
  std::ifstream input(settings_.input_path, std::ios::binary);
  if (!input) fail("cannot open the input file '{}': {}", settings_.input_path.string(), errno_text(errno));
  const LineWindows windows = settings_.windows;
  const ResumeState& resume = resume_state();
  return count_selected_requests(
      input,
      [&](uint64_t line) {
        return windows.owns(line) && !resume.in_output(line) && !resume.journal.lines.contains(line);
      },
      stop_);
}

BatchJobResult BatchJob::run(Engine& engine, const PromptBuilder& builder, const BatchJobObserver& observer) {
  PG_CHECK(!ran_, "a batch job runs once");
  ran_ = true;
  BatchJobResult result;
  result.any_line_failed = resume_state().has_error_lines;
  if (already_finished()) return result;
  if (files_) files_->start();
  std::istream& raw_input = settings_.input_path.empty() ? *settings_.input_stream : input_file_;
  // A stream into a file output is hashed as it is read: its manifest then records what
  // was read, so that merge can tell shards of two different streams apart.
  std::optional<HashingStreambuf> hashed;
  std::optional<std::istream> hashed_input;
  if (input_is_stream_ && files_) hashed_input.emplace(&hashed.emplace(*raw_input.rdbuf()));
  std::istream& input = hashed_input ? *hashed_input : raw_input;
  std::ostream& output = files_ ? files_->output() : output_device_ ? *output_device_ : *settings_.output_stream;
  const RunnerOutput sink{output, files_ ? &files_->journal() : nullptr, [this] {
                            if (files_) files_->on_all_written();
                          }};
  WindowRunner runner(input, sink, settings_, resume_state(), stop_);
  try {
    result.interrupted = !runner.run(engine, builder, observer);
    output.flush();
    if (files_) files_->finish(!result.interrupted, read_fingerprint(hashed, result.interrupted));
  } catch (const Error&) {
    if (files_ && files_->write_failed()) throw files_->write_failure();
    throw;
  }
  if (!files_ && !output) fail("writing the output failed (disk full or closed pipe?)");
  result.num_written_lines = runner.num_written();
  result.num_journaled_lines = runner.num_journaled();
  result.stats = RunStats{runner.job_stats(), engine.stats_so_far()};
  result.stats.job.shard = fmt::format("{}/{}", settings_.windows.shard, settings_.windows.num_shards);
  result.stats.job.job_key = job_key_;
  result.any_line_failed |= result.stats.num_failed_requests() > 0;
  return result;
}

}  // namespace pagedgen
