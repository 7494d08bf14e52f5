// `pagedgen generate` as it runs: option wiring around the batch job (job/batch_job.h).
// Refuses a file given twice, parses --shard, lists the manifest's settings, opens the job
// (input, output lock, --resume check) before the slow model load, loads the model onto
// the chosen backend, runs the job with the progress reporter, then writes the stats and
// the report and maps the result to an exit code. The interrupt guard's stop token goes to
// every long phase; a stop before the job runs ends it with nothing written.
#include <fmt/core.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <optional>

#include "backend_option.h"
#include "chat_template_option.h"
#include "engine/engine.h"
#include "engine_options.h"
#include "exit_codes.h"
#include "generate_options.h"
#include "generate_settings.h"
#include "interrupt.h"
#include "io/manifest.h"
#include "job/batch_job.h"
#include "job/prompt_builder.h"
#include "job/run_journal.h"
#include "model_option.h"
#include "path_clash.h"
#include "progress_reporter.h"
#include "report/html_report.h"
#include "util/error.h"
#include "util/text_file.h"

namespace pagedgen::app {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Every path generate reads or writes: the input, the output and the files beside it, the
// stats and the report (path_clash.h compares them).
std::vector<NamedPath> named_paths(const GenerateOptions& o) {
  std::vector<NamedPath> paths = {{"-i", o.input, false, 0}, {"-o", o.output, true, 1}};
  if (o.output != "-") {
    paths.push_back({"-o's manifest", manifest_path(o.output).string(), true});
    paths.push_back({"-o's journal", journal_path(o.output).string(), true});
  }
  paths.push_back({"--stats", o.stats_path, true});
  paths.push_back({"--report", o.report_path, true});
  return paths;
}

// --plan-window and --shard K/N (io/line_windows.h); the job adds the input's length.
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

std::string model_name(const std::filesystem::path& model_path) {
  return (std::filesystem::is_directory(model_path) ? model_path.filename() : model_path.stem()).string();
}

BatchJobSettings job_settings(const GenerateOptions& o, const std::filesystem::path& model_path) {
  BatchJobSettings s;
  if (o.input == "-")
    s.input_stream = &std::cin;
  else
    s.input_path = o.input;
  if (o.output == "-")
    s.output_stream = &std::cout;
  else
    s.output_path = o.output;
  s.format = requested_format(o.format);
  s.default_sampling = o.engine.sampling;
  s.model_name = model_name(model_path);
  s.windows = parse_windows(o);
  s.resume = o.resume;
  s.fsync_seconds = o.fsync_seconds;
  s.manifest_settings = manifest_settings(o, model_path);  // also the stats' job key
  return s;
}

// Opens the job; core's resume errors name no flag, so --resume is named here.
BatchJob open_job(const GenerateOptions& options, const std::filesystem::path& model_path, const StopToken& stop) {
  BatchJobSettings settings = job_settings(options, model_path);
  try {
    return BatchJob(std::move(settings), stop);
  } catch (const SettingError& error) {
    if (error.setting() != "resume") throw;
    fail("--resume: {}", error.what());
  }
}

struct LoadedModel {
  ModelSource source;
  ChosenBackend chosen;
  double load_seconds = 0;
};

LoadedModel load_model(const GenerateOptions& options, const StopToken& stop) {
  const auto start = Clock::now();
  LoadedModel loaded;
  loaded.source = open_model_source(options.backend, options.model);
  loaded.chosen = make_backend(options.backend, options.engine, loaded.source, options.block_size, options.quiet, stop);
  loaded.load_seconds = seconds_since(start);
  return loaded;
}

// The figures only the app knows: the model, the device's memory, the load time.
RunStats completed_stats(RunStats stats, const LoadedModel& loaded) {
  const DeviceMemoryReport memory = loaded.chosen.backend->device_memory();
  stats.job.model = loaded.source.name;
  stats.job.device = loaded.chosen.device;
  stats.job.device_weight_bytes = memory.weight_bytes;
  stats.job.device_kv_pool_bytes = memory.kv_pool_bytes;
  stats.job.device_activation_bytes = memory.activation_bytes;
  stats.job.load_seconds = loaded.load_seconds;
  return stats;
}

// `text` into `path`, or onto standard output for "-" (checked_stdout_use allowed it).
void write_file_or_stdout(const std::string& path, const std::string& text) {
  if (path == "-")
    fmt::print("{}", text);
  else
    write_text_file(path, text);
}

// --stats - or --report - take standard output only when the output lines do not, and
// only one of them: otherwise a usage error naming the flags.
std::optional<std::string> stdout_clash(const GenerateOptions& o) {
  const bool stats = o.stats_path == "-", report = o.report_path == "-";
  if (stats && report) return "--stats - and --report - both ask for standard output; give one of them a file";
  if ((stats || report) && o.output == "-")
    return fmt::format("{} - asks for standard output, which -o - gives the output lines; give a file",
                       stats ? "--stats" : "--report");
  return std::nullopt;
}

void write_outputs(const GenerateOptions& options, const RunStats& stats) {
  if (!options.stats_path.empty()) write_file_or_stdout(options.stats_path, stats.to_json());
  if (!options.report_path.empty()) write_file_or_stdout(options.report_path, run_report_html(stats, options.input));
  if (!options.quiet) fmt::print(stderr, "{}", stats.summary());
}

// After SIGINT or SIGTERM: where the output stands, and how to go on.
void report_interrupted(const GenerateOptions& options, const BatchJobResult& result, int signal) {
  std::string saved;
  if (result.num_journaled_lines > 0)
    saved = fmt::format(", {} more finished line{} kept in '{}'", result.num_journaled_lines,
                        result.num_journaled_lines == 1 ? "" : "s", journal_path(options.output).string());
  fmt::print(stderr, "pagedgen: stopped by {} after writing {} lines{}{}\n", signal == SIGINT ? "SIGINT" : "SIGTERM",
             result.num_written_lines, saved,
             options.output != "-" ? "; run the same command with --resume to go on" : "");
}

// After SIGINT or SIGTERM before the job ran (while the input was scanned or the model
// loaded): nothing was written.
void report_stopped_before_run(const GenerateOptions& options, int signal) {
  fmt::print(stderr, "pagedgen: stopped by {} before any line was read; nothing was written{}\n",
             signal == SIGINT ? "SIGINT" : "SIGTERM",
             options.output != "-" ? "; run the same command (with --resume if it resumed) to go on" : "");
}

int run_job(const GenerateOptions& options, const InterruptGuard& interrupt) {
  const StopToken stop = interrupt.stop_token();
  if (report_path_clash(named_paths(options))) return kExitUsage;
  if (const std::optional<std::string> clash = stdout_clash(options)) {
    fmt::print(stderr, "pagedgen: error: {}\n", *clash);
    return kExitUsage;
  }
  BatchJob job = open_job(options, resolve_model_path(options.model), stop);
  if (job.resume_state().num_torn_bytes > 0 && !options.quiet)
    fmt::print(stderr, "pagedgen: --resume: dropping a torn last line ({} bytes) of '{}'\n",
               job.resume_state().num_torn_bytes, options.output);
  if (job.already_finished()) {
    if (!options.quiet) fmt::print(stderr, "pagedgen: '{}' is already complete; nothing to resume\n", options.output);
    return job.resume_state().has_error_lines ? kExitLinesFailed : kExitOk;
  }

  const LoadedModel loaded = load_model(options, stop);
  const ModelVocabulary& vocabulary = loaded.source.vocabulary();
  const int64_t max_model_len = effective_max_model_len(options.engine, loaded.source.config.context_length);
  const ResolvedChatTemplate chat = resolve_chat_template(vocabulary, options.engine.chat);
  const PromptBuilder builder(vocabulary.tokenizer(), chat.chat_template, chat.reason_if_none, max_model_len,
                              unsupported_sampling(*loaded.chosen.backend));
  const EngineConfig engine_config =
      make_engine_config(options.engine, options.block_size, loaded.chosen.num_blocks, max_model_len);
  Engine engine(engine_config, *loaded.chosen.backend, &vocabulary.tokenizer());

  const ProgressReporter::Mode mode = ProgressReporter::mode_for_stderr(options.quiet);
  ProgressReporter progress(mode, options.progress_seconds,
                            mode == ProgressReporter::Mode::kQuiet ? std::nullopt : job.count_requests(),
                            engine_config.num_blocks);
  const BatchJobObserver observer{[&](uint64_t num_done, const EngineStats& e) {
    progress.update(num_done, e.num_generated_tokens, e.used_blocks);
  }};
  const BatchJobResult result = job.run(engine, builder, observer);
  progress.finish();

  write_outputs(options, completed_stats(result.stats, loaded));
  if (result.interrupted) {
    report_interrupted(options, result, interrupt.signal_received());
    return kExitInterrupted;
  }
  return result.any_line_failed ? kExitLinesFailed : kExitOk;
}

// The date the run renders chat templates with: pinned, or the one the resumed run recorded
// (so a resume renders the prompts it rendered), or today.
std::string chat_template_date_of(const GenerateOptions& options) {
  std::optional<std::string> recorded;
  if (options.resume && options.output != "-")
    if (const std::optional<Manifest> saved = read_manifest(manifest_path(options.output)))
      recorded = saved->setting("chat_template_date");
  return chat_template_date(options.engine.chat, recorded);
}

}  // namespace

int run_generate(const GenerateOptions& given) {
  const InterruptGuard interrupt;
  GenerateOptions options = given;
  options.engine.chat.date = chat_template_date_of(given);
  try {
    return run_job(options, interrupt);
  } catch (const Stopped&) {
    report_stopped_before_run(options, interrupt.signal_received());
    return kExitInterrupted;
  }
}

}  // namespace pagedgen::app
