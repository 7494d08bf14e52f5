// `pagedgen generate`: its flags and help. Decodes every request of a JSONL file with the
// paged KV cache and writes one output line per non-blank input line, in input order, plus
// the KV stats (generate_run.cpp runs it).
#include <charconv>
#include <memory>

#include <fmt/core.h>

#include "backend_option.h"
#include "command_help.h"
#include "commands.h"
#include "engine_options.h"
#include "exit_codes.h"
#include "generate_options.h"
#include "model_option.h"

namespace pagedgen::app {

namespace {

// Seconds from 0 to `most`, as written; CLI::Range lets NaN through (no comparison with it
// is true) and infinity is no interval.
CLI::Validator seconds_up_to(double most) {
  return CLI::Validator(
      [most](const std::string& value) -> std::string {
        double seconds = 0;
        const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
        if (error == std::errc() && end == value.data() + value.size() && seconds >= 0 && seconds <= most) return "";
        return fmt::format("must be a number of seconds from 0 to {}, got '{}'", most, value);
      },
      fmt::format("SECONDS in [0 - {}]", most));
}

}  // namespace

CLI::App* add_generate_flags(CLI::App& app, GenerateOptions& options) {
  CLI::App* cmd = add_command(
      app, "generate", "Decode every request of a JSONL file with a paged KV cache and prefix sharing.",
      "Input lines: {\"id\": ..., \"prompt\": \"text\"} or {\"id\": ..., \"messages\": [{\"role\": \"user\", "
      "\"content\": \"...\"}]}, with optional sampling fields (temperature, top_p, top_k, min_p, seed, stop, "
      "stop_token_ids, max_tokens, min_tokens, ignore_eos, n) overriding the flags above; presence_penalty, "
      "frequency_penalty, repetition_penalty, logit_bias ({\"<token id>\": bias}) and logprobs (k alternatives "
      "per generated token); and response_format ({\"type\": \"json_object\"} or {\"type\": \"json_schema\", "
      "\"json_schema\": {\"name\": ..., \"schema\": {...}}}) or vLLM's guided_json, guided_regex, guided_choice, "
      "guided_grammar and structured_outputs (structured outputs on either backend; a line's own wins over "
      "--json-schema, --json-object, --regex, --choice and --grammar). Keys that would change the output and are not "
      "implemented (stream, tools, ...) are unsupported_field errors; other unknown keys are ignored. Output: one "
      "line per non-blank input line, in input order: {\"id\", \"index\", \"text\", \"finish_reason\", "
      "\"logprobs\"?, \"usage\"} (\"choices\" when n > 1) or {\"id\", \"index\", \"error\": {\"code\", "
      "\"message\"}}. OpenAI batch files ({\"custom_id\", \"method\", \"url\", \"body\"} lines, as the OpenAI "
      "Batch API and vllm run-batch read "
      "them) are answered in that format. Logs and progress go to stderr only.");
  add_model_option(*cmd, options.model);
  cmd->add_option("-i,--input", options.input, "Input JSONL file; - reads standard input")->required();
  cmd->add_option("-o,--output", options.output,
                  "Output JSONL file, appended to and fsynced as lines finish, with OUTPUT.manifest.json beside it; "
                  "- writes standard output")
      ->required();
  cmd->add_option("--format", options.format,
                  "Input line format: plain, openai (OpenAI batch), or auto (from the first non-blank line); lines "
                  "of the other format become error lines")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "plain", "openai"}));
  cmd->add_flag("--resume", options.resume,
                "Continue an interrupted run: keep the output's complete lines, drop a torn last one, decode the "
                "rest; refused (exit 3, nothing written) when the manifest shows other input, model or settings, "
                "or a finished output no longer holds the lines, size and hash its run finished with");
  cmd->add_option("--fsync-interval", options.fsync_seconds, "Seconds between fsyncs of the output file, at most")
      ->capture_default_str()
      ->check(seconds_up_to(3600));
  cmd->add_option("--plan-window", options.plan_window,
                  "Input lines (blank ones included) planned and decoded together; memory stays bounded by one "
                  "window, prefixes are shared within it")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  cmd->add_option("--shard", options.shard,
                  "Process shard K of N (0 <= K < N): the windows w of --plan-window lines with w % N == K; "
                  "`pagedgen merge` joins the shards' outputs")
      ->capture_default_str();
  cmd->add_option("--stats", options.stats_path,
                  "Write the run's KV memory and time figures to this JSON file; - for standard output (when -o is "
                  "a file)");
  cmd->add_option("--report", options.report_path,
                  "Write a self-contained HTML page charting the KV blocks over the run; - for standard output (when "
                  "-o is a file)");
  add_block_size_option(*cmd, options.block_size);
  add_engine_options(*cmd, options.engine);
  add_backend_options(*cmd, options.backend);
  cmd->add_flag("-q,--quiet", options.quiet, "No progress bar, progress lines or summary on stderr");
  cmd->add_option("--progress-interval", options.progress_seconds,
                  "Seconds between progress log lines when stderr is not a terminal (on a terminal: a progress bar)")
      ->capture_default_str()
      ->check(seconds_up_to(86400));
  return cmd;
}

void add_generate_command(CLI::App& app, CommandRunner& selected) {
  auto o = std::make_shared<GenerateOptions>();
  add_generate_flags(app, *o)->parse_complete_callback([&selected, o] { selected = [o] { return run_generate(*o); }; });
}

}  // namespace pagedgen::app
