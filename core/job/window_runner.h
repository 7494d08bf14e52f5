// WindowRunner: the batch job's loop, one planning window at a time: read and prepare the
// window's lines (a bad one is finished as its error record at once), hand the prepared
// requests to the engine, step it until the window is done, and write every record in
// input order. On a resumed output the lines up to the last written one are decoded again
// (so that the window's plan and prefix-cache hits are an uninterrupted run's), but not
// written twice:
//
//   window:   [ line 20 .. 29 ]     last_written = 24
//   decoded:    20 .. 29            written: 25 .. 29
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "io/line_windows.h"
#include "io/output_writer.h"
#include "io/request_reader.h"
#include "job/batch_job.h"
#include "job/prompt_builder.h"
#include "job/run_stats.h"

namespace pagedgen {

class WindowRunner {
 public:
  // The streams must outlive the runner; `windows` selects the lines read.
  WindowRunner(std::istream& input, std::ostream& output, const BatchJobSettings& settings,
               const LineWindows& windows, std::optional<uint64_t> last_written);
  WindowRunner(const WindowRunner&) = delete;
  WindowRunner& operator=(const WindowRunner&) = delete;

  // Runs every window; false when the observer stopped it (at a step boundary).
  bool run(Engine& engine, const PromptBuilder& builder, const BatchJobObserver& observer);

  // Lines, requests, failed lines and prepare time so far.
  JobStats job_stats() const;
  uint64_t num_written() const { return writer_.num_written(); }

 private:
  std::vector<PreparedRequest> read_window(const PromptBuilder& builder);
  void prepare(RequestItem item, const PromptBuilder& builder, std::vector<PreparedRequest>& window);
  bool decode_window(Engine& engine, std::vector<PreparedRequest> window, const BatchJobObserver& observer);
  void finish(OutputRecord record);
  void finish_error(RequestError error);
  bool is_new(uint64_t index) const { return !last_written_ || index > *last_written_; }

  LineWindows windows_;
  std::optional<uint64_t> last_written_;
  std::string model_name_;
  RequestReader reader_;
  OutputWriter writer_;  // formats with reader_'s format
  std::optional<RequestItem> pending_;  // the first line of the next window
  uint64_t num_done_ = 0;               // requests finished (error lines included)
  int64_t num_requests_ = 0;
  int64_t num_failed_lines_ = 0;
  double prepare_seconds_ = 0;
};

}  // namespace pagedgen
