// Runs the built pagedgen binary from a test: arguments as one shell string, stderr
// captured, the exit code returned; and the shell-level helpers of the CLI contract tests
// (test_e2e_*): shell commands, quoting, polling, scratch directories, output lines and JSON
// fields.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace pagedgen::test {

struct CliResult {
  int exit_code;
  std::string stderr_text;
};

// Runs `pagedgen <args>` with stderr written to `stderr_file` and stdout to `stdout_file`
// (discarded by default). The CLI contract tests pin the CPU backend's bits, so GPUs are
// hidden from the child (CUDA_VISIBLE_DEVICES empty: --device auto picks the CPU) unless
// `allow_gpu`.
CliResult run_pagedgen(const std::string& args, const std::filesystem::path& stderr_file,
                       const std::filesystem::path& stdout_file = "/dev/null", bool allow_gpu = false);

// What one `generate` run of run_generate wrote: the output file's text and the stats path.
struct GenerateRun {
  std::string output;
  std::filesystem::path stats;
};

// Whether the run's stderr holds `text`.
bool says(const CliResult& r, const std::string& text);

// Runs `pagedgen generate -q --max-tokens 12 --seed 5 <flags>` on `input`, writing
// NAME.jsonl and NAME.stats.json in `dir`; fails the test unless it exits 0.
GenerateRun run_generate(const std::filesystem::path& dir, const std::filesystem::path& input, const std::string& name,
                         const std::string& flags);

// A stats JSON's text without its timing figures (the time_seconds and throughput objects):
// what two runs of the same schedule must have the same.
std::string stats_without_timings(const std::string& stats);

// Runs a shell command line; returns its exit code (fails the test if it did not exit).
int run_shell(const std::string& command);

// An empty directory pagedgen-NAME-PID under the system temp dir (emptied if it was there),
// left in place after the test.
std::filesystem::path scratch_dir(const char* name);

// `path` in single quotes, for a shell command line (test paths hold no quote).
std::string sh_quote(const std::filesystem::path& path);

// Polls every 20 ms until `done` holds; fails the test after `timeout_seconds`.
void wait_until(const std::function<bool()>& done, double timeout_seconds, const char* what);

// Output lines with each "cached_tokens":N written "cached_tokens":_. cached_tokens counts
// prompt tokens served from shared blocks, which by design depends on the block size and on
// sharing; everything else in a line must not.
std::string without_cached_tokens(const std::string& text);

// The newline-terminated lines of `text` (a torn last line is not one).
std::vector<std::string> complete_lines(const std::string& text);

// The integer `json`[object][key] of a JSON document (an output line or stats file's text).
int64_t json_int(const std::string& json, const char* object, const char* key);
// The same of the JSON document in a file (a stats file).
int64_t json_file_int(const std::filesystem::path& file, const char* object, const char* key);

}  // namespace pagedgen::test
