#include "job/window_runner.h"

#include <chrono>
#include <utility>
#include <variant>

#include "io/output_format.h"

namespace pagedgen {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool stop_requested(const BatchJobObserver& observer) { return observer.should_stop && observer.should_stop(); }

}  // namespace

WindowRunner::WindowRunner(std::istream& input, std::ostream& output, const BatchJobSettings& settings,
                           const LineWindows& windows, std::optional<uint64_t> last_written)
    : windows_(windows),
      last_written_(last_written),
      model_name_(settings.model_name),
      reader_(input, settings.default_sampling, settings.format, LineReader::kDefaultMaxLineBytes,
              [windows](uint64_t line) { return windows.owns(line); }),
      writer_(output, [this](const OutputRecord& record, const RecordContext& context) {
        return format_output_line(*reader_.format(), record, context);
      }) {}

bool WindowRunner::run(Engine& engine, const PromptBuilder& builder, const BatchJobObserver& observer) {
  pending_ = reader_.next();
  while (pending_) {
    if (stop_requested(observer)) return false;
    if (!decode_window(engine, read_window(builder), observer)) return false;
  }
  return true;
}

JobStats WindowRunner::job_stats() const {
  JobStats stats;
  stats.num_lines = static_cast<int64_t>(reader_.num_lines());
  stats.num_blank_lines = static_cast<int64_t>(reader_.num_blank_lines());
  stats.num_requests = num_requests_;
  stats.num_failed_lines = num_failed_lines_;
  stats.prepare_seconds = prepare_seconds_;
  return stats;
}

// Reads, templates and tokenizes the lines of the window of the pending line.
std::vector<PreparedRequest> WindowRunner::read_window(const PromptBuilder& builder) {
  const auto start = Clock::now();
  const uint64_t window = windows_.window_of(item_index(*pending_));
  std::vector<PreparedRequest> prepared;
  for (; pending_ && windows_.window_of(item_index(*pending_)) == window; pending_ = reader_.next())
    prepare(std::move(*pending_), builder, prepared);
  prepare_seconds_ += seconds_since(start);
  return prepared;
}

void WindowRunner::prepare(RequestItem item, const PromptBuilder& builder, std::vector<PreparedRequest>& window) {
  ++num_requests_;
  if (auto* error = std::get_if<RequestError>(&item)) return finish_error(std::move(*error));
  const Request& request = std::get<Request>(item);
  std::variant<PreparedRequest, RequestError> built = builder.build(request);
  if (auto* error = std::get_if<RequestError>(&built)) return finish_error(std::move(*error));
  if (is_new(request.index))
    writer_.expect(request.index, RecordContext{request.is_chat(), request.model.value_or(model_name_)});
  window.push_back(std::move(std::get<PreparedRequest>(built)));
}

// Plans and decodes the window; each record is written once every earlier line is.
bool WindowRunner::decode_window(Engine& engine, std::vector<PreparedRequest> window,
                                 const BatchJobObserver& observer) {
  const auto progress = [&] {
    if (observer.on_progress) observer.on_progress(num_done_, engine.stats());
  };
  engine.add_requests(std::move(window));
  while (engine.has_unfinished()) {
    for (OutputRecord& record : engine.step()) {
      finish(std::move(record));
      progress();
    }
    progress();
    if (stop_requested(observer)) return false;
  }
  return true;
}

void WindowRunner::finish(OutputRecord record) {
  ++num_done_;
  if (is_new(record_index(record))) writer_.complete(std::move(record));
}

void WindowRunner::finish_error(RequestError error) {
  ++num_failed_lines_;
  if (is_new(error.index)) writer_.expect(error.index);
  finish(std::move(error));
}

}  // namespace pagedgen
