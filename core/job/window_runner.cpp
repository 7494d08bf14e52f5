#include "job/window_runner.h"

#include <chrono>
#include <utility>
#include <variant>

#include "io/output_format.h"
#include "util/error.h"

namespace pagedgen {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

WindowRunner::WindowRunner(std::istream& input, const RunnerOutput& output, const BatchJobSettings& settings,
                           const ResumeState& resume, StopToken stop)
    : windows_(settings.windows),
      output_(output),
      stop_(stop),
      resumed_(resume.journal),
      model_name_(settings.model_name),
      reader_(input, settings.default_sampling, settings.format, LineReader::kDefaultMaxLineBytes,
              [windows = settings.windows, last = resume.last_written](uint64_t line) {
                return windows.owns(line) && (!last || line > *last);
              }),
      writer_(output.stream,
              [this](const OutputRecord& record, const RecordContext& context) {
                // Plain until a line says otherwise (the lines before are all errors).
                return format_output_line(reader_.format().value_or(RequestFormat::kPlain), record, context);
              }),
      num_earlier_(resume.num_earlier_requests()) {}

// A stop thrown while a window is read or planned ends the run between two steps too: the
// records finished so far (error lines) are committed, as after a step.
bool WindowRunner::run(Engine& engine, const PromptBuilder& builder, const BatchJobObserver& observer) {
  try {
    return run_windows(engine, builder, observer);
  } catch (const Stopped&) {
    if (output_.journal) output_.journal->commit();
    return false;
  }
}

bool WindowRunner::run_windows(Engine& engine, const PromptBuilder& builder, const BatchJobObserver& observer) {
  pending_ = reader_.next(stop_);
  while (pending_) {
    if (stop_.stop_requested()) return false;
    if (!decode_window(engine, read_window(builder), observer)) return false;
    // Every line of the window is written: the journal's entries are the output's now.
    if (output_.on_all_written) output_.on_all_written();
  }
  return true;
}

JobStats WindowRunner::job_stats() const {
  JobStats stats;
  stats.num_lines = static_cast<int64_t>(reader_.num_lines());
  stats.num_blank_lines = static_cast<int64_t>(reader_.num_blank_lines());
  stats.num_requests = static_cast<int64_t>(num_done_);
  stats.num_failed_lines = num_failed_lines_;
  stats.num_earlier_requests = static_cast<int64_t>(num_earlier_);
  stats.num_unfinished_requests = static_cast<int64_t>(num_read_ - num_from_journal_ - num_done_);
  stats.prepare_seconds = prepare_seconds_;
  return stats;
}

// Reads, templates and tokenizes the lines of the window of the pending line.
std::vector<PreparedRequest> WindowRunner::read_window(const PromptBuilder& builder) {
  const auto start = Clock::now();
  const uint64_t window = windows_.window_of(item_index(*pending_));
  std::vector<PreparedRequest> prepared;
  batch_lines_.clear();
  for (; pending_ && windows_.window_of(item_index(*pending_)) == window; pending_ = reader_.next(stop_))
    prepare(std::move(*pending_), builder, prepared);
  prepare_seconds_ += seconds_since(start);
  return prepared;
}

// A line the resumed journal holds is written from it; a bad line is finished at once.
void WindowRunner::prepare(RequestItem item, const PromptBuilder& builder, std::vector<PreparedRequest>& window) {
  ++num_read_;
  const uint64_t index = item_index(item);
  if (const auto journaled = resumed_.lines.find(index); journaled != resumed_.lines.end()) {
    writer_.expect(index);
    ++num_from_journal_;
    writer_.complete_line(index, std::move(journaled->second));
    resumed_.lines.erase(journaled);
    return;
  }
  if (auto* error = std::get_if<RequestError>(&item)) return finish_error(std::move(*error));
  const Request& request = std::get<Request>(item);
  std::variant<PreparedRequest, RequestError> built = builder.build(request);
  if (auto* error = std::get_if<RequestError>(&built)) return finish_error(std::move(*error));
  writer_.expect(request.index, RecordContext{request.is_chat(), request.model.value_or(model_name_)});
  PreparedRequest& prepared = std::get<PreparedRequest>(built);
  batch_lines_.push_back(request.index);
  window.push_back(std::move(prepared));
}

// Plans and decodes the window; each record is written once every earlier line is, and
// kept in the journal until then. A step's journal entries are written together.
bool WindowRunner::decode_window(Engine& engine, std::vector<PreparedRequest> window,
                                 const BatchJobObserver& observer) {
  const auto progress = [&] {
    if (observer.on_progress) observer.on_progress(num_done_, engine.stats());
  };
  if (output_.journal) output_.journal->commit();  // the window's error lines held
  engine.add_requests(std::move(window), stop_);
  while (engine.has_unfinished()) {
    StepResult result = engine.step();
    note_starts(result.started);
    for (OutputRecord& record : result.finished) {
      finish(std::move(record));
      progress();
    }
    if (output_.journal) output_.journal->commit();
    progress();
    if (stop_.stop_requested()) return false;
  }
  return true;
}

// Journals the cached prompt tokens of each request that started in the last step, which a
// resumed run reports for it.
void WindowRunner::note_starts(std::span<const RequestStart> started) {
  if (!output_.journal) return;
  for (const RequestStart& start : started) {
    const auto position = static_cast<std::size_t>(start.request_index);
    PG_CHECK(position < batch_lines_.size(), "request {} started, of a batch of {}", position, batch_lines_.size());
    const uint64_t index = batch_lines_[position];
    const auto earlier = resumed_.cached_tokens.find(index);  // its first start was in an earlier run
    output_.journal->add_admission(
        index, earlier != resumed_.cached_tokens.end() ? earlier->second : start.num_cached_prompt_tokens);
  }
}

// A request that started before the interruption reports the cached tokens of that start.
void WindowRunner::finish(OutputRecord record) {
  ++num_done_;
  const uint64_t index = record_index(record);
  if (auto* output = std::get_if<RequestOutput>(&record)) {
    if (const auto cached = resumed_.cached_tokens.find(index); cached != resumed_.cached_tokens.end())
      output->cached_tokens = cached->second;
  }
  journal_if_held(index, writer_.complete(std::move(record)));
}

void WindowRunner::finish_error(RequestError error) {
  ++num_failed_lines_;
  writer_.expect(error.index);
  finish(std::move(error));
}

void WindowRunner::journal_if_held(uint64_t index, const std::string* held_line) {
  if (held_line && output_.journal) output_.journal->add_line(index, *held_line);
}

}  // namespace pagedgen
