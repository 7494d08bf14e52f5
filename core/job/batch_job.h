// BatchJob: one `generate` run over a JSONL input, around the engine. It reads the input one
// planning window at a time (io/line_windows.h: only the lines of its shard), prepares the
// window's requests (a bad line becomes its error record at once), hands them to the
// engine and steps it until the window is done, writing one line per non-blank input line
// in input order. A file output is locked for the run, with a manifest beside it that a
// resumed job checks and a journal of the requests finished out of order
// (job/run_journal.h), so a kill loses only the requests in flight; a resumed job computes
// only the requests neither the output nor the journal holds.
//
//   BatchJob job(settings);               // checks files, locks the output, checks a resume
//   if (job.already_finished()) ...;      //   (before the slow model load; writes nothing)
//   BatchJobResult r = job.run(engine, builder, observer);
//
// Progress and interruption are the caller's: the observer hears of each step and record,
// and the stop token (util/stop_token.h) given at construction is read by every phase: the
// input's scans, reading and parsing its lines, compiling schemas, planning and stepping.
// A stop ends run() with whole lines in the output and the journal committed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "io/line_windows.h"
#include "io/manifest.h"
#include "io/request_parser.h"
#include "job/job_files.h"
#include "job/job_resume.h"
#include "job/prompt_builder.h"
#include "job/run_stats.h"
#include "sample/sampling_params.h"
#include "util/stop_token.h"

namespace pagedgen {

struct BatchJobSettings {
  // The input: a JSONL file, or (empty path) `input_stream`, e.g. standard input. A path
  // that names no regular file (a FIFO, /dev/null) is read once, as a stream.
  std::filesystem::path input_path;
  std::istream* input_stream = nullptr;
  // The output: a file, appended to durably with OUT.manifest.json and OUT.journal beside
  // it, or (empty path) `output_stream`, e.g. standard output (then nothing can be
  // resumed). A path that names no regular file (a FIFO, /dev/null) is written as a stream.
  std::filesystem::path output_path;
  std::ostream* output_stream = nullptr;

  std::optional<RequestFormat> format;  // nullopt: detected from the first non-blank line
  SamplingParams default_sampling;      // what a line does not set
  std::string model_name;               // the model an OpenAI batch line names unless its body does
  LineWindows windows;                  // window size and shard (the job adds the input's length)
  bool resume = false;                  // go on after the output's and the journal's lines
  double fsync_seconds = 1.0;           // between fsyncs of the output and the journal, at most
  // The manifest's settings after "input" (which the job fingerprints itself): what decides
  // the output's bytes, in a fixed order. Resume requires them unchanged.
  std::vector<std::pair<std::string, std::string>> manifest_settings;
};

struct BatchJobObserver {
  // After each engine step and each finished request; may be empty.
  std::function<void(uint64_t num_done_requests, const EngineStats& engine)> on_progress;
};

struct BatchJobResult {
  uint64_t num_written_lines = 0;    // to the output, by this run
  uint64_t num_journaled_lines = 0;  // finished by this run, kept in the journal until earlier lines are done
  bool interrupted = false;          // the stop token ended it; the output holds whole lines
  bool any_line_failed = false;      // an error line was written, by this run or (resume) before it
  // The job's figures (lines, requests, failed lines, prepare time, what they cover) and
  // the engine's. The caller adds what only it knows: model, device memory, load time.
  RunStats stats;
};

class BatchJob {
 public:
  // Opens the input, then checks the output: for a file, locks it and checks the manifest
  // and journal beside it (resume). Writes nothing yet. Throws Error when a file cannot be
  // opened, is the input, or is locked by another process; SettingError("resume") when the
  // output cannot be resumed; Stopped when `stop` asks while the input is scanned.
  explicit BatchJob(BatchJobSettings settings, StopToken stop = {});

  // What a resume found (empty when not resuming), e.g. the torn bytes it will cut.
  const ResumeState& resume_state() const;
  // The resumed output was complete already: run() has nothing to do.
  bool already_finished() const { return resume_state().finished; }
  // The requests run() will read (non-blank lines of its share not answered yet), for a
  // progress total; nullopt when the input is a stream, which can be read only once.
  // Throws Stopped when the stop token asks.
  std::optional<uint64_t> count_requests() const;

  // Runs the job (once) to the end of its input, or until the stop token asks (then
  // interrupted). `engine` and `builder` must be of the same model. Throws Error when the
  // output cannot be written.
  BatchJobResult run(Engine& engine, const PromptBuilder& builder, const BatchJobObserver& observer = {});

 private:
  void open_input();
  void open_output();
  Manifest make_manifest(const std::optional<std::string>& input_fingerprint) const;

  BatchJobSettings settings_;
  StopToken stop_;
  std::ifstream input_file_;
  bool input_is_stream_ = false;
  std::optional<std::ofstream> output_device_;  // an output path naming no regular file
  std::optional<JobFiles> files_;               // a regular output file's
  std::string job_key_;
  bool ran_ = false;
};

}  // namespace pagedgen
