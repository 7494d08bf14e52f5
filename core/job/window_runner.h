// WindowRunner: the batch job's loop, one planning window at a time: read and prepare the
// window's lines (a bad one is finished as its error record at once), hand the prepared
// requests to the engine, step it until the window is done, and write every record in
// input order. A record that must wait for an earlier line goes to the journal at the end
// of its step, with the cached prompt tokens of the requests that started in it
// (job/run_journal.h). On a resumed output, the lines the output holds are skipped
// unread, the lines the journal holds are written from it, and only the others run:
//
//   window:  [ line 20 .. 29 ]   output ends at 24, journal holds 26 and 28
//   run:       25 27 29          written from the journal: 26 28
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "io/line_windows.h"
#include "io/output_writer.h"
#include "io/request_reader.h"
#include "job/batch_job.h"
#include "job/job_resume.h"
#include "job/prompt_builder.h"
#include "job/run_journal.h"
#include "job/run_stats.h"
#include "util/stop_token.h"

namespace pagedgen {

// Where a runner's lines go.
struct RunnerOutput {
  std::ostream& stream;                  // the output, in input order
  JournalWriter* journal = nullptr;      // a file output's journal
  std::function<void()> on_all_written;  // after a window whose lines are all in `stream`
};

class WindowRunner {
 public:
  // The streams must outlive the runner; `settings.windows` selects the lines read. `stop`
  // is read while lines are read and parsed, while a window is planned, and after each step.
  WindowRunner(std::istream& input, const RunnerOutput& output, const BatchJobSettings& settings,
               const ResumeState& resume, StopToken stop);
  WindowRunner(const WindowRunner&) = delete;
  WindowRunner& operator=(const WindowRunner&) = delete;

  // Runs every window; false when the stop token stopped it: after a step, or wherever a
  // window's lines were read, parsed or planned (their records kept, none of them started).
  bool run(Engine& engine, const PromptBuilder& builder, const BatchJobObserver& observer);

  // Lines, requests, failed lines and prepare time so far, and what they cover.
  JobStats job_stats() const;
  uint64_t num_written() const { return writer_.num_written(); }
  // Finished lines not in the output yet, kept in the journal (an earlier line is unfinished).
  uint64_t num_journaled() const { return num_done_ + num_from_journal_ - writer_.num_written(); }

 private:
  std::vector<PreparedRequest> read_window(const PromptBuilder& builder);
  void prepare(RequestItem item, const PromptBuilder& builder, std::vector<PreparedRequest>& window);
  bool decode_window(Engine& engine, std::vector<PreparedRequest> window, const BatchJobObserver& observer);
  void note_starts(std::span<const RequestStart> started);
  void finish(OutputRecord record);
  void finish_error(RequestError error);
  void journal_if_held(uint64_t index, const std::string* held_line);

  bool run_windows(Engine& engine, const PromptBuilder& builder, const BatchJobObserver& observer);

  LineWindows windows_;
  RunnerOutput output_;
  StopToken stop_;
  JournalContents resumed_;  // the journal of a resumed run: lines to write, cached tokens to report
  std::string model_name_;
  RequestReader reader_;
  OutputWriter writer_;                 // formats with reader_'s format
  std::optional<RequestItem> pending_;  // the first line of the next window
  std::vector<uint64_t> batch_lines_;   // the input line of each request of the engine's batch
  uint64_t num_done_ = 0;               // requests this run answered (error lines included)
  uint64_t num_read_ = 0;               // requests read, journal's lines included
  uint64_t num_from_journal_ = 0;       // lines written from a resumed run's journal
  uint64_t num_earlier_ = 0;            // answered before this run (output and journal)
  int64_t num_failed_lines_ = 0;
  double prepare_seconds_ = 0;
};

}  // namespace pagedgen
