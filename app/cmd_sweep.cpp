// `pagedgen sweep`: the same input at several block sizes with one model load, and one
// table of what each size cost (KV blocks and bytes, utilization, fragmentation, sharing,
// prompt tokens computed, generated tokens/s, wall time), as text, JSON or CSV. It checks
// that the outputs are the same at every size: every field of every line but
// usage.cached_tokens, which by definition depends on the block size.
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
#include "engine/engine.h"
#include "engine/run_to_completion.h"
#include "job/input_loader.h"
#include "engine_options.h"
#include "exit_codes.h"
#include "input_file.h"
#include "io/plain_output.h"
#include "loader/model_files.h"
#include "model_option.h"
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

struct SweepRow {
  int32_t block_size = 0;
  RunStats stats;
  double wall_seconds = 0;
  std::vector<std::string> lines;       // the output file, one line per non-blank input line
  std::vector<std::string> comparable;  // the same with cached_tokens set to 0
};

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
  fmt::print("block_size,peak_blocks,peak_kv_bytes,utilization,fragmentation,sharing_factor,prompt_computed,generated,"
             "generated_tokens_per_second,wall_seconds,outputs_identical\n");
  for (const SweepRow& r : rows) {
    const EngineStats& e = r.stats.engine;
    fmt::print("{},{},{},{:.6g},{:.6g},{:.6g},{},{},{:.6g},{:.6g},{}\n", r.block_size, e.peak_used_blocks, e.peak_kv_bytes,
               e.utilization(), e.internal_fragmentation(), e.sharing_factor(), e.num_computed_prompt_tokens,
               e.num_generated_tokens, e.generated_tokens_per_second(), r.wall_seconds, identical ? "true" : "false");
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
  fmt::print("{}", JsonObject().add_bool("outputs_identical", identical).add_array("block_sizes", block_sizes).lines_text());
}

// What every block size's run shares: the input, the model and one backend.
struct SweepContext {
  const SweepOptions& options;
  const LoadedInput& loaded;
  const ModelSource& source;
  Backend& backend;
  int64_t max_model_len;
  double load_seconds;
};

// One block size: the whole input through a fresh engine, its output lines in input order.
SweepRow run_block_size(const SweepContext& ctx, int32_t block_size) {
  SweepRow row;
  row.block_size = block_size;
  const auto start = std::chrono::steady_clock::now();
  const int32_t num_blocks = ctx.backend.kv_pool_blocks(
      kv_pool_budget(ctx.options.engine, ctx.options.backend.gpu_memory_utilization), static_cast<std::size_t>(block_size));
  Engine engine(make_engine_config(ctx.options.engine, block_size, num_blocks, ctx.max_model_len), ctx.backend,
                &ctx.source.vocabulary().tokenizer());
  std::vector<OutputRecord> records(ctx.loaded.errors.begin(), ctx.loaded.errors.end());
  engine.add_requests(ctx.loaded.requests);
  for (OutputRecord& record : run_to_completion(engine)) records.push_back(std::move(record));
  std::ranges::sort(records, {}, [](const OutputRecord& r) { return record_index(r); });
  for (OutputRecord& record : records) {
    row.lines.push_back(format_plain_line(record));
    if (auto* output = std::get_if<RequestOutput>(&record)) output->cached_tokens = 0;
    row.comparable.push_back(format_plain_line(record));
  }
  row.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  row.stats.engine = engine.stats();
  row.stats.job.model = ctx.source.name;
  row.stats.job.device = ctx.backend.device();
  row.stats.job.num_lines = static_cast<int64_t>(ctx.loaded.num_lines);
  row.stats.job.num_blank_lines = static_cast<int64_t>(ctx.loaded.num_blank_lines);
  row.stats.job.num_requests = std::ssize(ctx.loaded.indices);
  row.stats.job.num_failed_lines = std::ssize(ctx.loaded.errors);
  row.stats.job.load_seconds = ctx.load_seconds;
  return row;
}

void write_outputs(const std::string& dir, const SweepRow& row) {
  std::filesystem::create_directories(dir);
  std::string text;
  for (const std::string& line : row.lines) text += line + '\n';
  write_text_file((std::filesystem::path(dir) / fmt::format("bs{}.jsonl", row.block_size)).string(), text);
}

// The input lines whose output differs between block sizes (cached_tokens aside).
std::vector<uint64_t> differing_lines(const std::vector<SweepRow>& rows, const LoadedInput& loaded) {
  std::vector<uint64_t> lines;
  for (std::size_t i = 0; i < rows.front().comparable.size(); ++i)
    if (!std::ranges::all_of(rows, [&](const SweepRow& r) { return r.comparable[i] == rows.front().comparable[i]; }))
      lines.push_back(loaded.indices[i]);
  return lines;
}

// Whether the backend promises the same text at every block size: the CPU always; a GPU in
// float32 (in bfloat16 or float16 a result may change with the batch a row runs in).
bool exact_across_schedules(const Backend& backend, const BackendOptions& options) {
  return backend.device().empty() || options.dtype == "float32";
}

int run_sweep(const SweepOptions& options) {
  InputFile input_file(options.input);
  const auto load_start = std::chrono::steady_clock::now();
  const ModelSource source = open_model_source(options.backend, options.model);
  const ChosenBackend chosen =
      make_backend(options.backend, options.engine, source, options.block_sizes.front(), options.quiet);
  const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  const int64_t max_model_len = effective_max_model_len(options.engine, source.config.context_length);
  const ResolvedChatTemplate chat = resolve_chat_template(source.vocabulary(), options.engine.chat_template);
  const PromptBuilder builder(source.vocabulary().tokenizer(), chat.chat_template, chat.reason_if_none, max_model_len,
                              unsupported_sampling(*chosen.backend));
  const LoadedInput loaded = load_input(input_file.stream(), options.engine.sampling, builder);

  const SweepContext ctx{options, loaded, source, *chosen.backend, max_model_len, load_seconds};
  std::vector<SweepRow> rows;
  for (int32_t block_size : options.block_sizes) {
    rows.push_back(run_block_size(ctx, block_size));
    const SweepRow& row = rows.back();
    if (!options.quiet)
      fmt::print(stderr, "pagedgen: block size {}: {} requests, {} tokens generated in {:.1f} s\n", block_size,
                 loaded.indices.size(), row.stats.engine.num_generated_tokens, row.wall_seconds);
    if (!options.outputs_dir.empty()) write_outputs(options.outputs_dir, row);
  }
  const std::vector<uint64_t> differing = differing_lines(rows, loaded);
  const bool identical = differing.empty();
  if (options.format == "json") print_json(rows, identical);
  else if (options.format == "csv") print_csv(rows, identical);
  else print_table(rows, identical);
  if (!options.report_path.empty()) {
    std::vector<SweepReportRow> report_rows;
    for (const SweepRow& r : rows) report_rows.push_back({r.block_size, r.stats, r.wall_seconds});
    write_text_file(options.report_path, sweep_report_html(report_rows, identical, options.input));
  }
  if (!identical) {
    const std::string which = fmt::format("{} of {} lines differ (input lines {})", differing.size(),
                                          loaded.indices.size(), fmt::join(differing, ", "));
    if (exact_across_schedules(*chosen.backend, options.backend))
      fail("the outputs differ between block sizes: {} (a bug: please report it with the input)", which);
    fmt::print(stderr, "pagedgen: the outputs differ between block sizes: {}; expected on a GPU in {}, where a "
               "result may change with the batch it runs in (use --dtype float32 for identical text)\n",
               which, options.backend.dtype);
  }
  const bool any_failed = std::ranges::any_of(rows, [](const SweepRow& r) { return r.stats.num_failed_requests() > 0; });
  return any_failed ? kExitLinesFailed : kExitOk;
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
      ->capture_default_str()->check(CLI::IsMember({"table", "json", "csv"}));
  cmd->add_option("--outputs", o->outputs_dir, "Also write each size's output file to DIR/bsN.jsonl");
  cmd->add_option("--report", o->report_path, "Write a self-contained HTML page comparing the block sizes");
  add_engine_options(*cmd, o->engine);
  add_backend_options(*cmd, o->backend);
  cmd->add_flag("-q,--quiet", o->quiet, "No progress lines on stderr");
  cmd->parse_complete_callback([&selected, o] { selected = [o] { return run_sweep(*o); }; });
}

}  // namespace pagedgen::app
