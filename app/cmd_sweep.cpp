// `pagedgen sweep`: the same input at several block sizes with one model load, and one
// table of what each size cost (KV blocks and bytes, utilization, fragmentation, sharing,
// prompt tokens computed, generated tokens/s, wall time), as text, JSON or CSV. It checks
// that the outputs are the same at every size: every field of every line but
// usage.cached_tokens, which by definition depends on the block size.
#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "backend/cpu_backend.h"
#include "chat_template_option.h"
#include "commands.h"
#include "engine/engine.h"
#include "engine/input_loader.h"
#include "engine_options.h"
#include "exit_codes.h"
#include "input_file.h"
#include "io/plain_output.h"
#include "model/model_files.h"
#include "model/model_weights.h"
#include "model_option.h"
#include "report/html_report.h"
#include "util/text_file.h"
#include "util/byte_units.h"
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
  std::size_t threads = 0;
  bool quiet = false;
};

struct SweepRow {
  int32_t block_size = 0;
  RunStats stats;
  double wall_seconds = 0;
  std::vector<std::string> lines;       // the output file, one line per non-blank input line
  std::vector<std::string> comparable;  // the same with cached_tokens set to 0
};

double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

// The figures of one row, in table order, for every output format.
struct RowFigures {
  double peak_kv_bytes, utilization, fragmentation, sharing, gen_tok_s;
};

RowFigures figures(const SweepRow& r) {
  const RunStats& s = r.stats;
  const double util = ratio(static_cast<double>(s.sum_filled_slots), static_cast<double>(s.sum_allocated_slots));
  return {static_cast<double>(s.peak_used_blocks * s.kv_bytes_per_block), util, 1.0 - util,
          ratio(static_cast<double>(s.sum_logical_slots), static_cast<double>(s.sum_filled_slots)),
          ratio(static_cast<double>(s.num_generated_tokens), s.generate_seconds)};
}

void print_table(const std::vector<SweepRow>& rows, bool identical) {
  fmt::print("{:>6} {:>12} {:>11} {:>7} {:>7} {:>8} {:>10} {:>10} {:>10} {:>8}\n", "block", "peak blocks", "peak KV",
             "util", "frag", "sharing", "computed", "generated", "gen tok/s", "wall s");
  for (const SweepRow& r : rows) {
    const RowFigures f = figures(r);
    fmt::print("{:>6} {:>12} {:>11} {:>7.4f} {:>7.4f} {:>8.2f} {:>10} {:>10} {:>10.1f} {:>8.1f}\n", r.block_size,
               r.stats.peak_used_blocks, format_bytes(static_cast<uint64_t>(f.peak_kv_bytes)), f.utilization,
               f.fragmentation, f.sharing, r.stats.num_computed_prompt_tokens, r.stats.num_generated_tokens, f.gen_tok_s,
               r.wall_seconds);
  }
  fmt::print("outputs identical across block sizes: {}\n", identical ? "yes" : "NO");
}

void print_csv(const std::vector<SweepRow>& rows, bool identical) {
  fmt::print("block_size,peak_blocks,peak_kv_bytes,utilization,fragmentation,sharing_factor,prompt_computed,generated,"
             "generated_tokens_per_second,wall_seconds,outputs_identical\n");
  for (const SweepRow& r : rows) {
    const RowFigures f = figures(r);
    fmt::print("{},{},{:.0f},{:.6g},{:.6g},{:.6g},{},{},{:.6g},{:.6g},{}\n", r.block_size, r.stats.peak_used_blocks,
               f.peak_kv_bytes, f.utilization, f.fragmentation, f.sharing, r.stats.num_computed_prompt_tokens,
               r.stats.num_generated_tokens, f.gen_tok_s, r.wall_seconds, identical ? "true" : "false");
  }
}

void print_json(const std::vector<SweepRow>& rows, bool identical) {
  fmt::print("{{\"outputs_identical\": {}, \"block_sizes\": [\n", identical ? "true" : "false");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SweepRow& r = rows[i];
    const RowFigures f = figures(r);
    fmt::print("  {{\"block_size\": {}, \"peak_blocks\": {}, \"peak_kv_bytes\": {:.0f}, \"utilization\": {:.6g}, "
               "\"fragmentation\": {:.6g}, \"sharing_factor\": {:.6g}, \"prompt_computed\": {}, \"generated\": {}, "
               "\"generated_tokens_per_second\": {:.6g}, \"wall_seconds\": {:.6g}, \"stats\": {}}}{}\n",
               r.block_size, r.stats.peak_used_blocks, f.peak_kv_bytes, f.utilization, f.fragmentation, f.sharing,
               r.stats.num_computed_prompt_tokens, r.stats.num_generated_tokens, f.gen_tok_s, r.wall_seconds,
               r.stats.to_json(), i + 1 < rows.size() ? "," : "");
  }
  fmt::print("]}}\n");
}

int run_sweep(const SweepOptions& options) {
  if (options.format != "table" && options.format != "json" && options.format != "csv")
    fail("--format '{}' is unknown: use table, json or csv", options.format);
  InputFile input_file(options.input);
  std::istream& input = input_file.stream();

  const auto load_start = std::chrono::steady_clock::now();
  const ModelFiles files(resolve_model_path(options.model));
  const ModelWeights weights = load_model_weights(files);
  const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  const ModelConfig& config = files.config();
  const int64_t max_model_len = effective_max_model_len(options.engine, config.context_length);
  const ResolvedChatTemplate chat = resolve_chat_template(files, options.engine.chat_template);
  const PromptBuilder builder(files.tokenizer(), chat.chat_template, chat.reason_if_none, max_model_len);
  const LoadedInput loaded = load_input(input, options.engine.sampling, builder);
  CpuBackend backend(config, weights, options.threads > 0 ? options.threads : default_num_threads());

  std::vector<SweepRow> rows;
  for (int32_t block_size : options.block_sizes) {
    SweepRow row;
    row.block_size = block_size;
    const auto start = std::chrono::steady_clock::now();
    const EngineConfig engine_config = make_engine_config(
        options.engine, block_size,
        pool_blocks(options.engine, block_size, backend.kv_bytes_per_block(static_cast<std::size_t>(block_size))),
        max_model_len);
    Engine engine(engine_config, backend, files.tokenizer(), config.vocab_size);
    std::vector<OutputRecord> records;
    for (const RequestError& e : loaded.errors) records.emplace_back(e);
    engine.run(loaded.requests, [&](OutputRecord record) { records.push_back(std::move(record)); });
    std::ranges::sort(records, {}, [](const OutputRecord& r) { return record_index(r); });
    for (OutputRecord& record : records) {
      row.lines.push_back(format_plain_line(record));
      if (auto* output = std::get_if<RequestOutput>(&record)) output->cached_tokens = 0;
      row.comparable.push_back(format_plain_line(record));
    }
    row.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    row.stats = engine.stats();
    row.stats.model = files.path().string();
    row.stats.num_lines = static_cast<int64_t>(loaded.num_lines);
    row.stats.num_blank_lines = static_cast<int64_t>(loaded.num_blank_lines);
    row.stats.num_requests = std::ssize(loaded.indices);
    row.stats.num_failed_requests += std::ssize(loaded.errors);
    row.stats.load_seconds = load_seconds;
    if (!options.quiet)
      fmt::print(stderr, "pagedgen: block size {}: {} requests, {} tokens generated in {:.1f} s\n", block_size,
                 loaded.indices.size(), row.stats.num_generated_tokens, row.wall_seconds);
    if (!options.outputs_dir.empty()) {
      std::filesystem::create_directories(options.outputs_dir);
      const auto path = std::filesystem::path(options.outputs_dir) / fmt::format("bs{}.jsonl", block_size);
      std::string text;
      for (const std::string& line : row.lines) text += line + '\n';
      write_text_file(path.string(), text);
    }
    rows.push_back(std::move(row));
  }
  const bool identical =
      std::ranges::all_of(rows, [&](const SweepRow& r) { return r.comparable == rows.front().comparable; });
  if (options.format == "json") print_json(rows, identical);
  else if (options.format == "csv") print_csv(rows, identical);
  else print_table(rows, identical);
  if (!options.report_path.empty()) {
    std::vector<SweepReportRow> report_rows;
    for (const SweepRow& r : rows) report_rows.push_back({r.block_size, r.stats, r.wall_seconds});
    write_text_file(options.report_path, sweep_report_html(report_rows, identical, options.input));
  }
  if (!identical) fail("the outputs differ between block sizes (a bug: please report it with the input)");
  return loaded.errors.empty() && std::ranges::all_of(rows, [](const SweepRow& r) {
           return r.stats.num_failed_requests == 0;
         }) ? kExitOk : kExitLinesFailed;
}

}  // namespace

void add_sweep_command(CLI::App& app, CommandRunner& selected) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Run the same input at each block size with one model load and print one table: peak KV blocks and bytes, "
      "utilization (slots holding a token / slots allocated), fragmentation, sharing factor, prompt tokens "
      "computed, generated tokens/s, wall time. Checks that the outputs are identical across block sizes "
      "(usage.cached_tokens aside); exit code 3 if they are not.");
  add_model_option(*cmd, o->model);
  cmd->add_option("-i,--input", o->input, "Input JSONL file (as for generate); - reads standard input")->required();
  cmd->add_option("--block-sizes", o->block_sizes, "Block sizes to run, comma-separated")
      ->delimiter(',')->capture_default_str()->check(CLI::Range(1, 256));
  cmd->add_option("--format", o->format, "The table as table, json or csv (standard output)")->capture_default_str();
  cmd->add_option("--outputs", o->outputs_dir, "Also write each size's output file to DIR/bsN.jsonl");
  cmd->add_option("--report", o->report_path, "Write a self-contained HTML page comparing the block sizes");
  add_engine_options(*cmd, o->engine);
  cmd->add_option("--threads", o->threads, "CPU threads (default: all)");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress lines on stderr");
  cmd->footer(kExitCodesHelp);
  cmd->parse_complete_callback([&selected, o] { selected = [o] { return run_sweep(*o); }; });
}

}  // namespace pagedgen::app
