// `pagedgen generate` as it runs: check (--resume) or write the manifest beside the output,
// then read, plan, decode and write the input one window of lines at a time
// (io/line_windows.h), until the input ends or a signal asks the run to stop.
#include <fmt/core.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "backend_option.h"
#include "chat_template_option.h"
#include "engine/engine.h"
#include "engine/prompt_builder.h"
#include "exit_codes.h"
#include "engine_options.h"
#include "generate_options.h"
#include "interrupt.h"
#include "progress_reporter.h"
#include "report/html_report.h"
#include "io/durable_output.h"
#include "io/line_windows.h"
#include "io/manifest.h"
#include "io/output_format.h"
#include "io/output_resume.h"
#include "io/output_writer.h"
#include "io/request_reader.h"
#include "model_option.h"
#include "util/error.h"
#include "util/file_fingerprint.h"
#include "util/json_quote.h"
#include "util/text_file.h"

namespace pagedgen::app {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Thrown from the engine's step callback to leave the run at a step boundary.
struct Interrupted {};

// --shard K/N: windows w with w % N == K.
LineWindows parse_windows(const GenerateOptions& options) {
  LineWindows windows;
  windows.window_lines = options.plan_window;
  unsigned long long shard = 0, num_shards = 0;
  char extra = 0;
  if (std::sscanf(options.shard.c_str(), "%llu/%llu%c", &shard, &num_shards, &extra) != 2 || num_shards == 0 ||
      shard >= num_shards)
    fail("--shard must be K/N with 0 <= K < N (e.g. 0/4 for the first of four shards), got '{}'", options.shard);
  windows.shard = shard;
  windows.num_shards = num_shards;
  return windows;
}

std::optional<RequestFormat> requested_format(const std::string& name) {
  if (name == "plain") return RequestFormat::kPlain;
  if (name == "openai") return RequestFormat::kOpenAiBatch;
  return std::nullopt;  // "auto": detected from the first non-blank line
}

// The settings that decide the output's bytes, which --resume requires unchanged. Threads,
// progress and fsync settings are left out: they never change a byte.
Manifest make_manifest(const GenerateOptions& o, const std::filesystem::path& model_path) {
  const EngineOptions& e = o.engine;
  const SamplingParams& s = e.sampling;
  std::string stops = "[";
  for (const std::string& stop : s.stop) stops += (stops.size() > 1 ? "," : "") + json_quote(stop);
  stops += "]";
  Manifest manifest;
  manifest.settings = {
      {"input", o.input == "-" ? "standard input" : fingerprint_file(o.input)},
      {"model", fingerprint_model(model_path)},
      {"format", o.format},
      {"chat_template", e.chat_template.empty() ? "auto" : e.chat_template},
      {"seed", fmt::format("{}", e.seed)},
      {"temperature", fmt::format("{}", s.temperature)},
      {"top_p", fmt::format("{}", s.top_p)},
      {"top_k", fmt::format("{}", s.top_k)},
      {"min_p", fmt::format("{}", s.min_p)},
      {"max_tokens", fmt::format("{}", s.max_tokens)},
      {"min_tokens", fmt::format("{}", s.min_tokens)},
      {"stop", stops},
      {"ignore_eos", s.ignore_eos ? "true" : "false"},
      {"n", fmt::format("{}", s.n)},
      {"max_model_len", fmt::format("{}", e.max_model_len)},
      // The engine settings change no text, but the prefix-cache hits (cached_tokens) in it.
      {"block_size", fmt::format("{}", o.block_size)},
      {"num_blocks", fmt::format("{}", e.num_blocks)},
      {"kv_cache_memory", e.kv_cache_memory},
      {"max_num_seqs", fmt::format("{}", e.max_num_seqs)},
      {"max_batch_tokens", fmt::format("{}", e.max_batch_tokens)},
      {"prefix_sharing", e.no_prefix_sharing ? "false" : "true"},
      {"plan_window", fmt::format("{}", o.plan_window)},
      // The backend: GPU sums round differently from the CPU's, and dtypes differ more.
      {"device", o.backend.device},
      {"dtype", o.backend.dtype},
      {"load_format", o.backend.load_format},
      {"shard", o.shard},
  };
  return manifest;
}

// Where a resumed run goes on: the last line already written, and whether the interrupted
// run had in fact finished.
struct ResumeState {
  std::optional<uint64_t> last_written;
  bool has_error_lines = false;  // among the lines kept (the exit code covers the whole file)
  bool finished = false;
};

// --resume: checks the manifest beside the output against `manifest` and cuts a torn last
// line. Throws Error when the output cannot be resumed.
ResumeState prepare_resume_of(const GenerateOptions& o, const Manifest& manifest) {
  const std::filesystem::path output(o.output);
  const std::optional<Manifest> saved = read_manifest(manifest_path(output));
  const bool has_output = std::filesystem::exists(output) && std::filesystem::file_size(output) > 0;
  if (!saved) {
    if (has_output)
      fail("--resume: '{}' has no manifest '{}', so nothing tells which settings wrote it; run without --resume "
           "to start over",
           output.string(), manifest_path(output).string());
    return {};
  }
  if (const std::optional<std::string> difference = describe_difference(*saved, manifest))
    fail("--resume: '{}' was written with other settings ({}); give the same input, model and flags, or run "
         "without --resume to start over",
         output.string(), *difference);
  if (!std::filesystem::exists(output)) return {};
  const ResumePoint point = prepare_resume(output);
  if (point.num_torn_bytes > 0 && !o.quiet)
    fmt::print(stderr, "pagedgen: --resume: dropped a torn last line ({} bytes) of '{}'\n", point.num_torn_bytes,
               output.string());
  return ResumeState{point.last_index, point.has_error_lines, saved->finished};
}

std::string model_name(const std::filesystem::path& model_path) {
  return (std::filesystem::is_directory(model_path) ? model_path.filename() : model_path.stem()).string();
}

}  // namespace

int run_generate(const GenerateOptions& options) {
  const InterruptGuard interrupt;
  LineWindows windows = parse_windows(options);
  if (options.resume && (options.input == "-" || options.output == "-"))
    fail("--resume needs an input file and an output file (-i FILE -o FILE): a stream cannot be checked or "
         "continued");
  // Open the input before the (slow) model load, so a wrong path fails at once.
  std::ifstream input_file;
  if (options.input != "-") {
    input_file.open(options.input, std::ios::binary);
    if (!input_file) fail("cannot open the input file '{}'", options.input);
  }
  std::istream& input = options.input == "-" ? std::cin : input_file;
  const std::filesystem::path model_path = resolve_model_path(options.model);

  // The output: stdout, or a durable file with its manifest (checked first on --resume).
  ResumeState resume;
  std::optional<Manifest> manifest;
  std::optional<DurableOutput> output_file;
  if (options.output != "-") {
    manifest = make_manifest(options, model_path);
    if (options.resume) resume = prepare_resume_of(options, *manifest);
    if (resume.finished) {
      if (!options.quiet) fmt::print(stderr, "pagedgen: '{}' is already complete; nothing to resume\n", options.output);
      return resume.has_error_lines ? kExitLinesFailed : kExitOk;
    }
    // The window of the last line written is run again whole (its lines already written
    // are not written twice), so that its prefix-cache figures match an uninterrupted run.
    if (resume.last_written) windows.first_window = windows.window_of(*resume.last_written);
    output_file.emplace(options.output, !options.resume, options.fsync_seconds);
    write_manifest(manifest_path(options.output), *manifest);
  }
  std::ostream& output = output_file ? output_file->stream() : std::cout;
  const auto is_new = [&](uint64_t index) { return !resume.last_written || index > *resume.last_written; };

  const auto load_start = Clock::now();
  const ModelSource source = open_model_source(options.backend, options.model);
  const ModelFiles& files = *source.files;
  const ModelConfig& config = source.config;
  ChosenBackend chosen = make_backend(options.backend, options.engine, source, options.block_size, options.quiet);
  Backend& backend = *chosen.backend;
  const double load_seconds = seconds_since(load_start);
  const int64_t max_model_len = effective_max_model_len(options.engine, config.context_length);
  const ResolvedChatTemplate chat = resolve_chat_template(files, options.engine.chat_template);
  const PromptBuilder builder(files.tokenizer(), chat.chat_template, chat.reason_if_none, max_model_len);
  const std::string default_model_name = model_name(model_path);

  const EngineConfig engine_config =
      make_engine_config(options.engine, options.block_size, chosen.num_blocks, max_model_len);
  Engine engine(engine_config, backend, files.tokenizer(), config.vocab_size);

  const LineSelection selection = [windows](uint64_t line) { return windows.owns(line); };
  const ProgressReporter::Mode progress_mode = ProgressReporter::mode_for_stderr(options.quiet);
  std::optional<uint64_t> num_total_requests;
  if (options.input != "-" && progress_mode != ProgressReporter::Mode::kQuiet) {
    std::ifstream counted(options.input, std::ios::binary);
    num_total_requests = count_selected_requests(counted, selection);
  }
  ProgressReporter progress(progress_mode, options.progress_seconds, num_total_requests, engine_config.num_blocks);

  RequestReader reader(input, options.engine.sampling, requested_format(options.format), LineReader::kDefaultMaxLineBytes,
                       selection);
  OutputWriter writer(output, [&reader](const OutputRecord& record, const RecordContext& context) {
    return format_output_line(*reader.format(), record, context);
  });
  uint64_t num_done = 0;
  int64_t num_requests = 0;
  int64_t num_line_errors = 0;
  double prepare_seconds = 0;
  const auto finish = [&](OutputRecord record) {
    ++num_done;
    if (is_new(record_index(record))) writer.complete(std::move(record));
  };
  const auto finish_error = [&](RequestError error) {
    ++num_line_errors;
    if (is_new(error.index)) writer.expect(error.index);
    finish(std::move(error));
  };

  try {
    std::optional<RequestItem> pending = reader.next();
    while (pending) {
      if (interrupt.signal_received()) throw Interrupted{};
      // Read, template and tokenize the lines of one window.
      const auto prepare_start = Clock::now();
      const uint64_t window = windows.window_of(item_index(*pending));
      std::vector<PreparedRequest> prepared;
      for (; pending && windows.window_of(item_index(*pending)) == window; pending = reader.next()) {
        ++num_requests;
        if (auto* error = std::get_if<RequestError>(&*pending)) {
          finish_error(std::move(*error));
          continue;
        }
        const Request& request = std::get<Request>(*pending);
        auto built = builder.build(request);
        if (auto* error = std::get_if<RequestError>(&built)) {
          finish_error(std::move(*error));
          continue;
        }
        if (is_new(request.index))
          writer.expect(request.index, RecordContext{request.is_chat(), request.model.value_or(default_model_name)});
        prepared.push_back(std::move(std::get<PreparedRequest>(built)));
      }
      prepare_seconds += seconds_since(prepare_start);
      // Plan and decode them; each record is written once every earlier line is.
      engine.run(
          std::move(prepared),
          [&](OutputRecord record) {
            finish(std::move(record));
            progress.update(num_done, engine.stats().num_generated_tokens, engine.stats().used_blocks);
          },
          [&](const RunStats& stats) {
            progress.update(num_done, stats.num_generated_tokens, stats.used_blocks);
            if (interrupt.signal_received()) throw Interrupted{};
          });
    }
  } catch (const Interrupted&) {
    // The lines written so far are whole and in input order; --resume goes on after them.
  }
  progress.finish();
  output.flush();
  if (!output) fail("writing the output failed (disk full?)");
  const int stop_signal = interrupt.signal_received();
  if (output_file) {
    output_file->close();
    manifest->finished = stop_signal == 0;
    write_manifest(manifest_path(options.output), *manifest);
  }

  RunStats& stats = engine.stats();
  stats.model = source.name;
  const DeviceMemoryReport device_memory = backend.device_memory();
  stats.device = chosen.device;
  stats.device_weight_bytes = device_memory.weight_bytes;
  stats.device_kv_pool_bytes = device_memory.kv_pool_bytes;
  stats.device_activation_bytes = device_memory.activation_bytes;
  stats.num_lines = static_cast<int64_t>(reader.num_lines());
  stats.num_blank_lines = static_cast<int64_t>(reader.num_blank_lines());
  stats.num_requests = num_requests;
  stats.num_failed_requests += num_line_errors;
  stats.load_seconds = load_seconds;
  stats.prepare_seconds = prepare_seconds;
  if (!options.stats_path.empty()) write_text_file(options.stats_path, stats.to_json());
  if (!options.report_path.empty()) write_text_file(options.report_path, run_report_html(stats, options.input));
  if (!options.quiet) fmt::print(stderr, "{}", stats.summary());
  if (stop_signal != 0) {
    fmt::print(stderr, "pagedgen: stopped by {} after writing {} lines{}\n", stop_signal == SIGINT ? "SIGINT" : "SIGTERM",
               writer.num_written(), output_file ? "; run the same command with --resume to go on" : "");
    return kExitInterrupted;
  }
  return stats.num_failed_requests > 0 || resume.has_error_lines ? kExitLinesFailed : kExitOk;
}

}  // namespace pagedgen::app
