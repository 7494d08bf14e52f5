// BatchJob: one `generate` run over a JSONL input, around the engine. It reads the input one
// planning window at a time (io/line_windows.h: only the windows of its shard), prepares
// the window's requests (a bad line becomes its error record at once), hands them to the
// engine and steps it until the window is done, writing one line per non-blank input line
// in input order. A file output is durable, with a manifest beside it that a resumed job
// checks; the job then goes on after the output's last complete line.
//
//   BatchJob job(settings);               // opens input and output, checks a resume
//   if (job.already_finished()) ...;      //   (before the slow model load)
//   BatchJobResult r = job.run(engine, builder, observer);
//
// Progress and interruption are the caller's: the observer hears of each step and record,
// and is asked at each step boundary whether to stop.
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
#include "io/durable_output.h"
#include "io/line_windows.h"
#include "io/manifest.h"
#include "io/request_parser.h"
#include "job/job_resume.h"
#include "job/prompt_builder.h"
#include "job/run_stats.h"
#include "sample/sampling_params.h"

namespace pagedgen {

struct BatchJobSettings {
  // The input: a JSONL file, or (empty path) `input_stream`, e.g. standard input.
  std::filesystem::path input_path;
  std::istream* input_stream = nullptr;
  // The output: a file, appended to durably with OUT.manifest.json beside it, or (empty
  // path) `output_stream`, e.g. standard output (then nothing can be resumed).
  std::filesystem::path output_path;
  std::ostream* output_stream = nullptr;

  std::optional<RequestFormat> format;  // nullopt: detected from the first non-blank line
  SamplingParams default_sampling;      // what a line does not set
  std::string model_name;               // the model an OpenAI batch line names unless its body does
  LineWindows windows;                  // window size and shard; first_window is the job's (resume)
  bool resume = false;                  // go on after the output's last complete line
  double fsync_seconds = 1.0;           // between fsyncs of the output file, at most
  // The manifest's settings after "input" (which the job fingerprints itself): what decides
  // the output's bytes, in a fixed order. Resume requires them unchanged.
  std::vector<std::pair<std::string, std::string>> manifest_settings;
};

struct BatchJobObserver {
  // After each engine step and each finished request; either callback may be empty.
  std::function<void(uint64_t num_done_requests, const EngineStats& engine)> on_progress;
  // Asked before each window and after each step: true stops the job there.
  std::function<bool()> should_stop;
};

struct BatchJobResult {
  uint64_t num_written_lines = 0;  // by this run
  bool interrupted = false;        // should_stop ended it; the output holds whole lines
  bool any_line_failed = false;    // an error line was written, by this run or (resume) before it
  // The job's figures (lines, requests, failed lines, prepare time) and the engine's. The
  // caller adds what only it knows: model, device memory, load time.
  RunStats stats;
};

class BatchJob {
 public:
  // Opens the input, then the output: for a file, checks the manifest beside it (resume) or
  // starts a new one. Throws Error when a file cannot be opened, SettingError("resume")
  // when the output cannot be resumed.
  explicit BatchJob(BatchJobSettings settings);

  // What a resume found (empty when not resuming), e.g. the torn bytes it cut.
  const ResumeState& resume_state() const { return resume_; }
  // The resumed output was complete already: run() has nothing to do.
  bool already_finished() const { return resume_.finished; }
  // The requests run() will read (non-blank lines of its windows), for a progress total;
  // nullopt when the input is a stream, which can be read only once.
  std::optional<uint64_t> count_requests() const;

  // Runs the job (once) to the end of its input, or until the observer stops it. `engine`
  // and `builder` must be of the same model. Throws Error when the output cannot be written.
  BatchJobResult run(Engine& engine, const PromptBuilder& builder, const BatchJobObserver& observer = {});

 private:
  void open_input();
  void open_output();
  BatchJobResult finish_output(BatchJobResult result);

  BatchJobSettings settings_;
  std::ifstream input_file_;
  std::optional<Manifest> manifest_;  // a file output's
  std::optional<DurableOutput> output_file_;
  ResumeState resume_;
};

}  // namespace pagedgen
