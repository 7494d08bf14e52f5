// `pagedgen sweep`: the same input at several block sizes with one model load (the sweep
// job, job/sweep_job.h), and one table of what each size cost (KV blocks and bytes,
// utilization, fragmentation, sharing, prompt tokens computed, generated tokens/s, wall
// time), as text, JSON or CSV. Outputs that differ between sizes fail the run where the
// backend promises identical text, and are listed otherwise.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "backend_option.h"
#include "chat_template_option.h"
#include "command_help.h"
#include "commands.h"
#include "engine_options.h"
#include "exit_codes.h"
#include "input_file.h"
#include "job/input_loader.h"
#include "job/sweep_job.h"
#include "loader/model_files.h"
#include "model_option.h"
#include "path_clash.h"
#include "report/html_report.h"
#include "util/text_file.h"
#include "util/byte_units.h"
#include "util/json_writer.h"
#include "util/error.h"

namespace pagedgen::app {

namespace {

struct SweepOptions {
  std::string model;
  std::string input;
  std::vector<int32_t> block_sizes = {8, 16, 32, 64};
  std::string format = "table";
  std::string outputs_dir;
  std::string report_path;
  EngineOptions engine;
  BackendOptions backend;
  bool quiet = false;
};

// Every path sweep reads or writes: the input, each size's output under --outputs, the report.
std::vector<NamedPath> named_paths(const SweepOptions& o) {
  std::vector<NamedPath> paths = {{"-i", o.input, false, 0}, {"--report", o.report_path, true}};
  if (!o.outputs_dir.empty())
    for (const int32_t block_size : o.block_sizes)
      paths.push_back(
          {"--outputs", (std::filesystem::path(o.outputs_dir) / fmt::format("bs{}.jsonl", block_size)).string(), true});
  return paths;
}

void print_table(const std::vector<SweepRow>& rows, bool identical) {
  fmt::print("{:>6} {:>12} {:>11} {:>7} {:>7} {:>8} {:>10} {:>10} {:>10} {:>8}\n", "block", "peak blocks", "peak KV",
             "util", "frag", "sharing", "computed", "generated", "gen tok/s", "wall s");
  for (const SweepRow& r : rows) {
    const EngineStats& e = r.stats.engine;
    fmt::print("{:>6} {:>12} {:>11} {:>7.4f} {:>7.4f} {:>8.2f} {:>10} {:>10} {:>10.1f} {:>8.1f}\n", r.block_size,
               e.peak_used_blocks, format_bytes(static_cast<uint64_t>(e.peak_kv_bytes)), e.utilization(),
               e.internal_fragmentation(), e.sharing_factor(), e.num_computed_prompt_tokens, e.num_generated_tokens,
               e.generated_tokens_per_second(), r.wall_seconds);
  }
  fmt::print("outputs identical across block sizes: {}\n", identical ? "yes" : "NO");
}

void print_csv(const std::vector<SweepRow>& rows, bool identical) {
  fmt::print(
      "block_size,peak_blocks,peak_kv_bytes,utilization,fragmentation,sharing_factor,prompt_computed,generated,"
      "generated_tokens_per_second,wall_seconds,outputs_identical\n");
  for (const SweepRow& r : rows) {
    const EngineStats& e = r.stats.engine;
    fmt::print("{},{},{},{:.6g},{:.6g},{:.6g},{},{},{:.6g},{:.6g},{}\n", r.block_size, e.peak_used_blocks,
               e.peak_kv_bytes, e.utilization(), e.internal_fragmentation(), e.sharing_factor(),
               e.num_computed_prompt_tokens, e.num_generated_tokens, e.generated_tokens_per_second(), r.wall_seconds,
               identical ? "true" : "false");
  }
}

void print_json(const std::vector<SweepRow>& rows, bool identical) {
  JsonArray block_sizes(/*one_per_line=*/true);
  for (const SweepRow& r : rows) {
    const EngineStats& e = r.stats.engine;
    block_sizes.add_object(JsonObject()
                               .add_int("block_size", r.block_size)
                               .add_int("peak_blocks", e.peak_used_blocks)
                               .add_int("peak_kv_bytes", e.peak_kv_bytes)
                               .add_real("utilization", e.utilization())
                               .add_real("fragmentation", e.internal_fragmentation())
                               .add_real("sharing_factor", e.sharing_factor())
                               .add_int("prompt_computed", e.num_computed_prompt_tokens)
                               .add_int("generated", e.num_generated_tokens)
                               .add_real("generated_tokens_per_second", e.generated_tokens_per_second())
                               .add_real("wall_seconds", r.wall_seconds)
                               .add_object("stats", r.stats.to_json_object()));
  }
  fmt::print("{}",
             JsonObject().add_bool("outputs_identical", identical).add_array("block_sizes", block_sizes).lines_text());
}

void write_outputs(const std::string& dir, const SweepRow& row) {
  std::filesystem::create_directories(dir);
  std::string text;
  for (const std::string& line : row.lines) text += line + '\n';
  write_text_file((std::filesystem::path(dir) / fmt::format("bs{}.jsonl", row.block_size)).string(), text);
}

// Whether the backend promises the same text at every block size: the CPU always; a GPU in
// float32 (in bfloat16 or float16 a result may change with the batch a row runs in).
bool exact_across_schedules(const Backend& backend, const BackendOptions& options) {
  return backend.device().empty() || options.dtype == "float32";
}

// The settings of the sweep job: the flags, and what the app knows of the run.
SweepSettings sweep_settings(const SweepOptions& options, const ModelSource& source, const Backend& backend,
                             int64_t max_model_len, double load_seconds) {
  SweepSettings settings;
  settings.block_sizes = options.block_sizes;
  // Each size's block size and pool are the job's to set.
  settings.engine = make_engine_config(options.engine, /*block_size=*/0, /*num_blocks=*/0, max_model_len);
  settings.pool_budget = kv_pool_budget(options.engine, options.backend.gpu_memory_utilization);
  settings.job.model = source.name;
  settings.job.device = backend.device();
  settings.job.load_seconds = load_seconds;
  return settings;
}

// Outputs that differ between block sizes: a bug where the backend promises the same text,
// a warning otherwise.
void report_differences(const SweepOptions& options, const SweepResult& result, const LoadedInput& loaded,
                        const Backend& backend) {
  const std::string which = fmt::format("{} of {} lines differ (input lines {})", result.differing_lines.size(),
                                        loaded.indices.size(), fmt::join(result.differing_lines, ", "));
  if (exact_across_schedules(backend, options.backend))
    fail("the outputs differ between block sizes: {} (a bug: please report it with the input)", which);
  fmt::print(stderr,
             "pagedgen: the outputs differ between block sizes: {}; expected on a GPU in {}, where a "
             "result may change with the batch it runs in (use --dtype float32 for identical text)\n",
             which, options.backend.dtype);
}

void print_result(const SweepOptions& options, const SweepResult& result) {
  const bool identical = result.outputs_identical();
  if (options.format == "json")
    print_json(result.rows, identical);
  else if (options.format == "csv")
    print_csv(result.rows, identical);
  else
    print_table(result.rows, identical);
  if (!options.report_path.empty()) {
    std::vector<SweepReportRow> report_rows;
    for (const SweepRow& r : result.rows) report_rows.push_back({r.block_size, r.stats, r.wall_seconds});
    write_text_file(options.report_path, sweep_report_html(report_rows, identical, options.input));
  }
}

int run_sweep(const SweepOptions& options) {
  if (report_path_clash(named_paths(options))) return kExitUsage;
  InputFile input_file(options.input);
  const auto load_start = std::chrono::steady_clock::now();
  const ModelSource source = open_model_source(options.backend, options.model);
  const ChosenBackend chosen =
      make_backend(options.backend, options.engine, source, options.block_sizes.front(), options.quiet);
  const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  const int64_t max_model_len = effective_max_model_len(options.engine, source.config.context_length);
  const ResolvedChatTemplate chat = resolve_chat_template(source.vocabulary(), options.engine.chat);
  const PromptBuilder builder(source.vocabulary().tokenizer(), chat.chat_template, chat.reason_if_none, max_model_len,
                              unsupported_sampling(*chosen.backend));
  const LoadedInput loaded = load_input(input_file.stream(), options.engine.sampling, builder);

  const auto on_block_size = [&](const SweepRow& row) {
    if (!options.quiet)
      fmt::print(stderr, "pagedgen: block size {}: {} requests, {} tokens generated in {:.1f} s\n", row.block_size,
                 loaded.indices.size(), row.stats.engine.num_generated_tokens, row.wall_seconds);
    if (!options.outputs_dir.empty()) write_outputs(options.outputs_dir, row);
  };
  const SweepResult result =
      sweep_block_sizes(sweep_settings(options, source, *chosen.backend, max_model_len, load_seconds), loaded,
                        *chosen.backend, &source.vocabulary().tokenizer(), on_block_size);
  print_result(options, result);
  if (!result.outputs_identical()) report_differences(options, result, loaded, *chosen.backend);
  return result.any_failed() ? kExitLinesFailed : kExitOk;
}

}  // namespace

void add_sweep_command(CLI::App& app, CommandRunner& selected) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = add_command(
      app, "sweep", "Run the same input at several block sizes with one model load; print one table.",
      "The table: peak KV blocks and bytes, utilization (slots holding a token / slots allocated), "
      "fragmentation, sharing factor, prompt tokens computed, generated tokens/s, wall time. Checks that the "
      "outputs are identical across block sizes (usage.cached_tokens aside): exit code 3 if they are not where the "
      "backend promises it (CPU, or a GPU in float32); on a GPU in bfloat16/float16 the lines that differ are "
      "listed instead.");
  add_model_option(*cmd, o->model);
  cmd->add_option("-i,--input", o->input, "Input JSONL file (as for generate); - reads standard input")->required();
  add_block_sizes_option(*cmd, o->block_sizes);
  cmd->add_option("--format", o->format, "The table as table, json or csv (standard output)")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json", "csv"}));
  cmd->add_option("--outputs", o->outputs_dir, "Also write each size's output file to DIR/bsN.jsonl");
  cmd->add_option("--report", o->report_path, "Write a self-contained HTML page comparing the block sizes");
  add_engine_options(*cmd, o->engine);
  add_backend_options(*cmd, o->backend);
  cmd->add_flag("-q,--quiet", o->quiet, "No progress lines on stderr");
  cmd->parse_complete_callback([&selected, o] { selected = [o] { return run_sweep(*o); }; });
}

}  // namespace pagedgen::app
