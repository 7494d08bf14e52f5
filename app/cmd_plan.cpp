// `pagedgen plan`: a dry run from the tokenizer alone (no weights are read). It reads and
// prepares the input as `generate` would, runs the plan job (job/plan_job.h: the engine's
// step loop at each block size on a backend that computes nothing, the pool sized by the
// backend --device selects), and reports what the run would hold: prefix groups, distinct
// prompt tokens, peak KV blocks and bytes against naive reservation, whether the pool
// suffices without preemption, and the requests that can never fit.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "chat_template_option.h"
#include "command_help.h"
#include "commands.h"
#include "backend_option.h"
#include "engine_options.h"
#include "exit_codes.h"
#include "input_file.h"
#include "job/input_loader.h"
#include "job/plan_job.h"
#include "loader/model_files.h"
#include "model_option.h"
#include "path_clash.h"
#include "util/byte_units.h"
#include "util/error.h"
#include "util/json_writer.h"
#include "util/ratio.h"
#include "util/text_file.h"

namespace pagedgen::app {

namespace {

struct PlanOptions {
  std::string model;
  std::string input;
  std::string json_path;
  std::vector<int32_t> block_sizes = {8, 16, 32, 64};
  EngineOptions engine;
  BackendOptions backend;
};

// Every path plan reads or writes: the input and the JSON file.
std::vector<NamedPath> named_paths(const PlanOptions& o) {
  return {{"-i", o.input, false, 0}, {"--json", o.json_path, true, 1}};
}

// The KV element type of the backend that sized the pool, as --kv-cache-dtype spells it.
std::string kv_dtype_label(const Backend& backend, const BackendOptions& options) {
  return backend.device().empty() ? pagedgen::kv_dtype_name(resolved_cpu_kv_dtype(options)) : options.dtype;
}

std::string optional_id(const std::optional<std::string>& id_json) { return id_json ? *id_json : "null"; }

JsonObject plan_row_json(const PlanRow& r) {
  const EngineStats& s = r.stats;
  JsonArray cannot_fit;
  for (const RequestError& x : r.rejected)
    cannot_fit.add_object(JsonObject()
                              .add_int("index", static_cast<int64_t>(x.index))
                              .add_raw("id", optional_id(x.id_json))
                              .add_string("reason", x.message));
  JsonObject row;
  row.add_int("block_size", r.block_size)
      .add_int("kv_bytes_per_block", static_cast<int64_t>(r.kv_bytes_per_block))
      .add_int("pool_blocks", s.num_pool_blocks)
      .add_int("peak_blocks", s.peak_used_blocks)
      .add_int("peak_kv_bytes", s.peak_kv_bytes)
      .add_real("mean_blocks", s.mean_used_blocks())
      .add_real("utilization", s.utilization())
      .add_int("prompt_computed", s.num_computed_prompt_tokens)
      .add_int("generated", s.num_generated_tokens)
      .add_int("steps", s.num_steps)
      .add_int("preemptions", s.preemptions)
      .add_int("naive_peak_max_model_len_bytes", s.peak_naive_max_len_bytes())
      .add_int("naive_peak_request_bytes", s.peak_naive_request_bytes())
      .add_bool("fits_without_preemption", r.fits())
      .add_array("cannot_fit", cannot_fit);
  // A model with sliding-window layers: each layer kind's pool and peak (kind 0's are the figures above).
  if (!s.kinds.empty()) {
    JsonArray kinds;
    for (std::size_t k = 0; k < s.kinds.size(); ++k)
      kinds.add_object(JsonObject()
                           .add_int("kind", static_cast<int64_t>(k))
                           .add_int("window", s.kinds[k].window)
                           .add_int("kv_bytes_per_block", s.kinds[k].kv_bytes_per_block)
                           .add_int("pool_blocks", s.kinds[k].num_pool_blocks)
                           .add_int("peak_blocks", s.kinds[k].peak_used_blocks)
                           .add_int("peak_kv_bytes", s.kinds[k].peak_kv_bytes())
                           .add_int("peak_sequence_positions", s.kinds[k].peak_sequence_positions));
    row.add_array("kv_kinds", kinds).add_int("peak_full_attention_kv_bytes", s.peak_full_attention_kv_bytes);
  }
  return row;
}

std::string plan_json(const PlanOptions& options, const ModelFiles& files, const LoadedInput& input,
                      std::size_t bytes_per_token, const std::string& kv_dtype, const std::string& budget,
                      const std::vector<PlanRow>& rows) {
  JsonArray invalid;
  for (const RequestError& e : input.errors)
    invalid.add_object(JsonObject()
                           .add_int("index", static_cast<int64_t>(e.index))
                           .add_raw("id", optional_id(e.id_json))
                           .add_string("code", e.code)
                           .add_string("message", e.message));
  JsonArray block_sizes(/*one_per_line=*/true);
  for (const PlanRow& r : rows) block_sizes.add_object(plan_row_json(r));
  const EngineStats& first = rows.front().stats;
  return JsonObject()
      .add_string("input", options.input)
      .add_string("model", files.path().string())
      .add_int("lines", input.num_lines)
      .same_line()
      .add_int("blank_lines", input.num_blank_lines)
      .same_line()
      .add_int("requests", static_cast<int64_t>(input.indices.size()))
      .same_line()
      .add_int("invalid_requests", static_cast<int64_t>(input.errors.size()))
      .add_array("invalid", invalid)
      .add_int("prompt_tokens", first.num_prompt_tokens)
      .same_line()
      .add_int("distinct_prompt_tokens", first.num_distinct_prompt_tokens)
      .same_line()
      .add_int("prefix_groups", first.num_prefix_groups)
      .add_string("kv_dtype", kv_dtype)
      .same_line()
      .add_int("kv_bytes_per_token", static_cast<int64_t>(bytes_per_token))
      .same_line()
      .add_string("budget", budget)
      .add_array("block_sizes", block_sizes)
      .lines_text();
}

// The plan as text on `out` (standard output, or standard error when --json takes it).
void print_plan(std::FILE* out, const LoadedInput& input, std::size_t bytes_per_token, const std::string& kv_dtype,
                const std::string& budget, const std::vector<PlanRow>& rows, double seconds) {
  const EngineStats& first = rows.front().stats;
  fmt::print(out, "input: {} lines ({} blank), {} requests, {} of them invalid\n", input.num_lines,
             input.num_blank_lines, input.indices.size(), input.errors.size());
  for (std::size_t i = 0; i < std::min<std::size_t>(input.errors.size(), 10); ++i)
    fmt::print(out, "  line {} (id {}): {}: {}\n", input.errors[i].index + 1, optional_id(input.errors[i].id_json),
               input.errors[i].code, input.errors[i].message);
  if (input.errors.size() > 10)
    fmt::print(out, "  ... and {} more (all of them in --json)\n", input.errors.size() - 10);
  fmt::print(out, "prompt tokens: {} total, {} distinct ({:.2f}x shared), {} prefix groups (at block size {})\n",
             first.num_prompt_tokens, first.num_distinct_prompt_tokens,
             ratio(first.num_prompt_tokens, first.num_distinct_prompt_tokens), first.num_prefix_groups,
             rows.front().block_size);
  fmt::print(out, "KV: {} per token ({}); pool {}; every sample assumed to generate its max_tokens\n",
             format_bytes(bytes_per_token), kv_dtype, budget);
  fmt::print(out, "{:>6} {:>11} {:>8} {:>8} {:>11} {:>6} {:>9} {:>8} {:>13} {:>13} {:>5}\n", "block", "bytes/block",
             "pool", "peak", "peak KV", "util", "computed", "preempt", "naive maxlen", "naive req", "fits");
  for (const PlanRow& r : rows) {
    const EngineStats& s = r.stats;
    fmt::print(out, "{:>6} {:>11} {:>8} {:>8} {:>11} {:>6.3f} {:>9} {:>8} {:>13} {:>13} {:>5}\n", r.block_size,
               format_bytes(r.kv_bytes_per_block), s.num_pool_blocks, s.peak_used_blocks,
               format_bytes(static_cast<uint64_t>(s.peak_kv_bytes)), s.utilization(), s.num_computed_prompt_tokens,
               s.preemptions, format_bytes(static_cast<uint64_t>(s.peak_naive_max_len_bytes())),
               format_bytes(static_cast<uint64_t>(s.peak_naive_request_bytes())), r.fits() ? "yes" : "no");
  }
  for (const PlanRow& r : rows) {
    // Sliding-window layers: "pool" and "peak" above are the full-attention kind's blocks,
    // "peak KV" is over every kind.
    for (std::size_t k = 0; k < r.stats.kinds.size(); ++k) {
      const KvKindFigures& f = r.stats.kinds[k];
      fmt::print(
          out, "  block size {}, layer kind {} ({}): pool {} blocks, peak {} ({}), at most {} positions per sequence\n",
          r.block_size, k, f.window == 0 ? std::string("full attention") : fmt::format("window {}", f.window),
          f.num_pool_blocks, f.peak_used_blocks, format_bytes(static_cast<uint64_t>(f.peak_kv_bytes())),
          f.peak_sequence_positions);
    }
    if (!r.stats.kinds.empty())
      fmt::print(out, "  block size {}: peak KV {}, {:.1f}% of the {} every layer keeping every position would hold\n",
                 r.block_size, format_bytes(static_cast<uint64_t>(r.stats.peak_kv_bytes)),
                 100.0 * r.stats.peak_kv_fraction_of_full_attention(),
                 format_bytes(static_cast<uint64_t>(r.stats.peak_full_attention_kv_bytes)));
  }
  for (const PlanRow& r : rows) {
    if (r.rejected.empty()) continue;
    fmt::print(out, "cannot fit at block size {} ({} requests):\n", r.block_size, r.rejected.size());
    for (std::size_t i = 0; i < std::min<std::size_t>(r.rejected.size(), 10); ++i)
      fmt::print(out, "  line {} (id {}): {}\n", r.rejected[i].index + 1, optional_id(r.rejected[i].id_json),
                 r.rejected[i].message);
  }
  fmt::print(stderr, "pagedgen: planned in {:.2f} s, no weights loaded\n", seconds);
}

PlanSettings plan_settings(const PlanOptions& options, int64_t max_model_len) {
  PlanSettings settings;
  settings.block_sizes = options.block_sizes;
  // Each size's block size and pool are the job's to set.
  settings.engine = make_engine_config(options.engine, /*block_size=*/0, /*num_blocks=*/0, max_model_len);
  settings.pool_budget = kv_pool_budget(options.engine, options.backend.gpu_memory_utilization);
  return settings;
}

int run_plan(const PlanOptions& options) {
  if (report_path_clash(named_paths(options))) return kExitUsage;
  const auto start = std::chrono::steady_clock::now();
  InputFile input_file(options.input);
  const ModelFiles files(resolve_model_path(options.model));  // metadata and tokenizer; weights stay on disk
  const int64_t max_model_len = effective_max_model_len(options.engine, files.config().context_length);
  const ResolvedChatTemplate chat = resolve_chat_template(files.vocabulary(), options.engine.chat);
  const std::unique_ptr<Backend> sizing = make_sizing_backend(options.backend, options.engine, files.config(), false);
  // On the CPU the sizing backend is a dry run standing for the CPU backend, which applies
  // token masks, penalties and logprobs; on a GPU it is the CUDA backend itself.
  const bool on_gpu = !sizing->device().empty();
  const PromptBuilder builder(files.tokenizer(), chat.chat_template, chat.reason_if_none, max_model_len,
                              on_gpu ? unsupported_sampling(*sizing) : UnsupportedSampling{});
  const LoadedInput loaded = load_input(input_file.stream(), options.engine.sampling, builder);

  const PlanResult plan = plan_block_sizes(plan_settings(options, max_model_len), loaded, *sizing);
  const std::size_t bytes_per_token = plan.kv_bytes_per_token;
  const std::vector<PlanRow>& rows = plan.rows;
  const std::string kv_dtype = kv_dtype_label(*sizing, options.backend);
  const std::string budget = describe_kv_pool_budget(options.engine, options.backend.gpu_memory_utilization, on_gpu);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_plan(options.json_path == "-" ? stderr : stdout, loaded, bytes_per_token, kv_dtype, budget, rows, seconds);
  if (!options.json_path.empty()) {
    const std::string json = plan_json(options, files, loaded, bytes_per_token, kv_dtype, budget, rows);
    if (options.json_path == "-") {
      fmt::print("{}", json);
    } else {
      write_text_file(options.json_path, json);
    }
  }
  return loaded.errors.empty() && plan.all_requests_fit() ? kExitOk : kExitLinesFailed;
}

}  // namespace

void add_plan_command(CLI::App& app, CommandRunner& selected) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = add_command(
      app, "plan", "Predict a run's KV memory from the tokenizer alone, per block size (no weights read).",
      "Reads and tokenizes the input as generate would, runs the engine's step loop at each block size on a "
      "backend that computes nothing, every sample generating its max_tokens, with the KV pool the --device "
      "backend would allocate, and prints prefix groups, distinct vs total prompt tokens, peak KV blocks and bytes "
      "beside naive reservation (for a model with sliding windows, the full-attention kind's blocks, the KV bytes "
      "over every layer kind, and a line per kind), whether the pool suffices without preemption, and the requests "
      "that can never fit. Exit code 1 when some line is invalid or some request cannot fit.");
  add_model_option(*cmd, o->model);
  cmd->add_option("-i,--input", o->input, "Input JSONL file; - reads standard input")->required();
  add_block_sizes_option(*cmd, o->block_sizes);
  cmd->add_option("--json", o->json_path,
                  "Also write the plan as JSON to this file; - for standard output (the table then goes to stderr)");
  add_engine_options(*cmd, o->engine);
  add_backend_options(*cmd, o->backend, false);
  cmd->parse_complete_callback([&selected, o] { selected = [o] { return run_plan(*o); }; });
}

}  // namespace pagedgen::app
