// SIGTERM and SIGINT wherever `generate` is (issue 32, defect 7): while it parses a line of
// 1,000,000 keys, compiles a large response_format schema, or loads the model. Each run
// exits 4 and `--resume` then ends with an uninterrupted run's bytes. The signal is sent
// when the phase has begun (the output's manifest is written just before the first line
// is read; the model file is mapped while it loads); a run that got further still exits 4,
// so no case depends on timing. The seconds from the signal to the exit are printed, never
// asserted; the hang guard is generous.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <functional>
#include <sstream>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "io/manifest.h"
#include "test_paths.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

constexpr double kHangGuardSeconds = 300;

// A small tail after the phase's line, so that the resumed file has lines of its own.
const std::string kTail =
    "{\"id\": \"t1\", \"prompt\": \"The capital of France is\", \"max_tokens\": 3}\n"
    "{\"id\": \"t2\", \"messages\": [{\"role\": \"user\", \"content\": \"Say hi.\"}], \"max_tokens\": 3}\n";

// One line whose reading takes seconds: a prompt and `num_keys` other keys (ignored).
std::string many_keys_line(int num_keys) {
  std::string line = R"({"id": "keys", "prompt": "Hello", "max_tokens": 2)";
  for (int i = 0; i < num_keys; ++i) line += fmt::format(R"(, "k{}": {})", i, i);
  return line + "}\n";
}

// One line whose schema takes seconds to compile (and its token masks to build): an object
// of `num_properties` required booleans.
std::string large_schema_line(int num_properties) {
  std::string properties, required;
  for (int i = 0; i < num_properties; ++i) {
    properties += fmt::format(R"({}"p{}": {{"type": "boolean"}})", i ? ", " : "", i);
    required += fmt::format(R"({}"p{}")", i ? ", " : "", i);
  }
  return fmt::format(
      R"({{"id": "schema", "prompt": "Fill in:", "max_tokens": 3, "response_format": {{"type": "json_schema", )"
      R"("json_schema": {{"name": "big", "schema": {{"type": "object", "properties": {{{}}}, "required": [{}]}}}}}}}})"
      "\n",
      properties, required);
}

// /proc/PID/maps names the model file: the model is being loaded (or is loaded).
bool maps_model(pid_t pid) {
  std::ifstream maps(fmt::format("/proc/{}/maps", pid));
  std::ostringstream text;
  text << maps.rdbuf();
  return text.str().find(default_model()->filename().string()) != std::string::npos;
}

struct StoppedRun {
  int exit_code = -1;
  double seconds_to_exit = 0;
  bool had_manifest = false;  // the job had started when the run ended
  std::string stderr_text;
};

class StopCase {
 public:
  StopCase(const std::string& name, const std::string& input_text) : dir_("pagedgen-stop-" + name) {
    std::ofstream(input_) << input_text;
  }

  // Starts `generate`, waits until `ready(pid)`, sends `signal`, and waits for the exit.
  StoppedRun stop_when(const std::function<bool(pid_t)>& ready, int signal) const {
    const std::string pid_file = out_.string() + ".pid", rc_file = out_.string() + ".rc";
    run_shell(
        fmt::format("('{}' generate -i {} -o {} --progress-interval 1000 2> {} & echo $! > {}; wait $!; "
                    "echo $? > {}) > /dev/null 2>&1 &",
                    pagedgen_binary().string(), sh_quote(input_), sh_quote(out_), sh_quote(out_.string() + ".stderr"),
                    sh_quote(pid_file), sh_quote(rc_file)));
    wait_until([&] { return std::filesystem::exists(pid_file) && !read_file(pid_file).empty(); }, 60, "the pid");
    const auto pid = static_cast<pid_t>(std::stol(read_file(pid_file)));
    wait_until([&] { return ready(pid) || std::filesystem::exists(rc_file); }, kHangGuardSeconds, "the phase");
    REQUIRE_MESSAGE(!std::filesystem::exists(rc_file), "the run ended before the signal");
    const auto sent = std::chrono::steady_clock::now();
    REQUIRE(::kill(pid, signal) == 0);
    wait_until([&] { return std::filesystem::exists(rc_file) && !read_file(rc_file).empty(); }, kHangGuardSeconds,
               "the run to end after the signal");
    StoppedRun run;
    run.seconds_to_exit = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
    run.exit_code = std::stoi(read_file(rc_file));
    run.had_manifest = std::filesystem::exists(manifest_path(out_));
    run.stderr_text = read_file(out_.string() + ".stderr");
    return run;
  }

  // The job has started: its first line is being read.
  bool job_started() const { return std::filesystem::exists(manifest_path(out_)); }

  // Resumes the stopped run and checks its file against an uninterrupted run's.
  void check_resume() const {
    const CliResult reference = run_pagedgen(
        fmt::format("generate -q -i {} -o {}", sh_quote(input_), sh_quote(dir_ / "ref.jsonl")), dir_ / "ref.stderr");
    REQUIRE_MESSAGE(reference.exit_code == 0, reference.stderr_text);
    const CliResult resumed = run_pagedgen(
        fmt::format("generate -q -i {} -o {} --resume", sh_quote(input_), sh_quote(out_)), dir_ / "resumed.stderr");
    REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.stderr_text);
    CHECK(read_file(out_) == read_file(dir_ / "ref.jsonl"));
  }

 private:
  TempDir dir_;
  std::filesystem::path input_ = dir_ / "in.jsonl";
  std::filesystem::path out_ = dir_ / "out.jsonl";
};

void report(const char* phase, int signal, const StoppedRun& run) {
  MESSAGE(fmt::format("{} while {}: exit {}, {:.3f} s after the signal ({})", signal == SIGINT ? "SIGINT" : "SIGTERM",
                      phase, run.exit_code, run.seconds_to_exit,
                      run.had_manifest ? "the job had started" : "before the job started: nothing written"));
  INFO(run.stderr_text);
  CHECK(run.exit_code == 4);
  CHECK(run.stderr_text.find(signal == SIGINT ? "stopped by SIGINT" : "stopped by SIGTERM") != std::string::npos);
}

}  // namespace

TEST_CASE("SIGTERM or SIGINT while a line of 1,000,000 keys is parsed: exit 4, and the resume ends the same") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  for (const int signal : {SIGTERM, SIGINT}) {
    const StopCase stop_case(signal == SIGTERM ? "keys-term" : "keys-int", many_keys_line(1'000'000) + kTail);
    const StoppedRun run = stop_case.stop_when([&](pid_t) { return stop_case.job_started(); }, signal);
    report("parsing a line of 1,000,000 keys", signal, run);
    stop_case.check_resume();
  }
}

TEST_CASE("SIGINT while a large response_format schema compiles: exit 4, and the resume ends the same") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const StopCase stop_case("schema", large_schema_line(5000) + kTail);
  const StoppedRun run = stop_case.stop_when([&](pid_t) { return stop_case.job_started(); }, SIGINT);
  report("compiling a schema of 5,000 properties", SIGINT, run);
  stop_case.check_resume();
}

TEST_CASE("SIGTERM or SIGINT while the model loads: exit 4 with nothing written, and the resume ends the same") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  for (const int signal : {SIGTERM, SIGINT}) {
    const StopCase stop_case(signal == SIGTERM ? "load-term" : "load-int", kTail);
    const StoppedRun run = stop_case.stop_when([&](pid_t pid) { return maps_model(pid); }, signal);
    report("loading the model", signal, run);
    stop_case.check_resume();
  }
}
