// `pagedgen generate`: decode every request of a JSONL file with the paged KV cache and
// write one output line per non-blank input line, in input order, plus the KV stats.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>

#include "backend/cpu_backend.h"
#include "chat_template_option.h"
#include "commands.h"
#include "engine/engine.h"
#include "engine/input_loader.h"
#include "engine_options.h"
#include "engine/prompt_builder.h"
#include "exit_codes.h"
#include "io/output_writer.h"
#include "io/plain_output.h"
#include "model/model_files.h"
#include "model/model_weights.h"
#include "model_option.h"
#include "report/html_report.h"
#include "util/text_file.h"
#include "util/error.h"

namespace pagedgen::app {

namespace {

struct GenerateOptions {
  std::string model;
  std::string input;
  std::string output;
  std::string stats_path;
  std::string report_path;
  int32_t block_size = 16;
  EngineOptions engine;
  std::size_t threads = 0;
  bool quiet = false;
  double progress_seconds = 10.0;
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int run_generate(const GenerateOptions& options) {
  // Open the files before the (slow) model load, so a wrong path fails at once.
  std::ifstream input_file;
  if (options.input != "-") {
    input_file.open(options.input, std::ios::binary);
    if (!input_file) fail("cannot open the input file '{}'", options.input);
  }
  std::istream& input = options.input == "-" ? std::cin : input_file;
  std::ofstream output_file;
  if (options.output != "-") {
    output_file.open(options.output, std::ios::binary | std::ios::trunc);
    if (!output_file) fail("cannot create the output file '{}'", options.output);
  }
  std::ostream& output = options.output == "-" ? std::cout : output_file;

  RunStats stats;
  const auto load_start = Clock::now();
  const ModelFiles files(resolve_model_path(options.model));
  const ModelWeights weights = load_model_weights(files);
  const ModelConfig& config = files.config();
  const double load_seconds = seconds_since(load_start);
  const int64_t max_model_len = effective_max_model_len(options.engine, config.context_length);

  // Read every line first: the prefix planner needs the whole input.
  const auto prepare_start = Clock::now();
  OutputWriter writer(output, format_plain_line);
  const ResolvedChatTemplate chat = resolve_chat_template(files, options.engine.chat_template);
  const PromptBuilder builder(files.tokenizer(), chat.chat_template, chat.reason_if_none, max_model_len);
  LoadedInput loaded = load_input(input, options.engine.sampling, builder);
  for (uint64_t index : loaded.indices) writer.expect(index);
  stats.num_requests = std::ssize(loaded.indices);
  stats.num_lines = static_cast<int64_t>(loaded.num_lines);
  stats.num_blank_lines = static_cast<int64_t>(loaded.num_blank_lines);
  const int64_t num_line_errors = std::ssize(loaded.errors);
  for (RequestError& error : loaded.errors) writer.complete(std::move(error));
  std::vector<PreparedRequest> prepared = std::move(loaded.requests);
  const double prepare_seconds = seconds_since(prepare_start);

  CpuBackend backend(config, weights, options.threads > 0 ? options.threads : default_num_threads());
  const EngineConfig engine_config = make_engine_config(
      options.engine, options.block_size,
      pool_blocks(options.engine, options.block_size,
                  backend.kv_bytes_per_block(static_cast<std::size_t>(options.block_size))),
      max_model_len);
  Engine engine(engine_config, backend, files.tokenizer(), config.vocab_size);

  const std::size_t num_to_run = prepared.size();
  std::size_t num_done = 0;
  auto last_progress = Clock::now();
  const auto run_start = Clock::now();
  engine.run(
      std::move(prepared),
      [&](OutputRecord record) {
        ++num_done;
        writer.complete(std::move(record));
      },
      [&](const RunStats& s) {
        if (options.quiet || seconds_since(last_progress) < options.progress_seconds) return;
        last_progress = Clock::now();
        fmt::print(stderr, "pagedgen: {}/{} requests done, {} tokens generated, {:.1f} tokens/s, KV blocks peak {}/{}\n",
                   num_done, num_to_run, s.num_generated_tokens,
                   s.num_generated_tokens / std::max(1e-9, seconds_since(run_start)), s.peak_used_blocks,
                   engine_config.num_blocks);
      });
  output.flush();
  if (!output) fail("writing the output failed (disk full?)");

  RunStats& final_stats = engine.stats();
  final_stats.model = files.path().string();
  final_stats.num_lines = stats.num_lines;
  final_stats.num_blank_lines = stats.num_blank_lines;
  final_stats.num_requests = stats.num_requests;
  final_stats.num_failed_requests += num_line_errors;
  final_stats.load_seconds = load_seconds;
  final_stats.prepare_seconds = prepare_seconds;
  if (!options.stats_path.empty()) write_text_file(options.stats_path, final_stats.to_json());
  if (!options.report_path.empty()) write_text_file(options.report_path, run_report_html(final_stats, options.input));
  if (!options.quiet) fmt::print(stderr, "{}", final_stats.summary());
  return final_stats.num_failed_requests > 0 ? kExitLinesFailed : kExitOk;
}

}  // namespace

void add_generate_command(CLI::App& app, CommandRunner& selected) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "generate",
      "Decode every request of a JSONL file with a paged KV cache and prefix sharing. Input lines: "
      "{\"id\": ..., \"prompt\": \"text\"} or {\"id\": ..., \"messages\": [{\"role\": \"user\", \"content\": "
      "\"...\"}]}, with optional sampling fields (temperature, top_p, top_k, min_p, seed, stop, stop_token_ids, "
      "max_tokens, min_tokens, ignore_eos, n) overriding the flags below. Output: one line per non-blank input "
      "line, in input order: {\"id\", \"index\", \"text\", \"finish_reason\", \"usage\"} (\"choices\" when n > 1) "
      "or {\"id\", \"index\", \"error\": {\"code\", \"message\"}}.");
  add_model_option(*cmd, o->model);
  cmd->add_option("-i,--input", o->input, "Input JSONL file; - reads standard input")->required();
  cmd->add_option("-o,--output", o->output, "Output JSONL file; - writes standard output")->required();
  cmd->add_option("--stats", o->stats_path, "Write the run's KV memory and time figures to this JSON file");
  cmd->add_option("--report", o->report_path, "Write a self-contained HTML page charting the KV blocks over the run");
  cmd->add_option("--block-size", o->block_size, "Tokens per KV block")->capture_default_str()->check(CLI::Range(1, 256));
  add_engine_options(*cmd, o->engine);
  cmd->add_option("--threads", o->threads, "CPU threads (default: all)");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress lines or summary on stderr");
  cmd->add_option("--progress-interval", o->progress_seconds, "Seconds between progress lines")->capture_default_str();
  cmd->footer(kExitCodesHelp);
  cmd->parse_complete_callback([&selected, o] { selected = [o] { return run_generate(*o); }; });
}

}  // namespace pagedgen::app
