// Crash safety: a 60-line run killed with SIGKILL once half its requests have finished
// resumes computing only the unfinished ones (counted from the resumed run's stats) and
// ends byte-identical to an uninterrupted run; a run stopped with SIGTERM says in its
// summary what finished and what did not, and resumes the same way.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <thread>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "job/run_journal.h"
#include "test_paths.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

constexpr int kNumLines = 60;

// 60 requests of 2 to 24 new tokens, so that they finish over many steps: chat lines
// sharing the template's system prompt (their cached_tokens depend on when they started),
// greedy plain lines, seeded sampled lines.
std::string input_text() {
  const char* topics[] = {"the Moon", "rivers",   "bees", "volcanoes", "chess",
                          "bread",    "glaciers", "owls", "tides",     "comets"};
  std::string text;
  for (int i = 0; i < kNumLines; ++i) {
    const char* topic = topics[i % 10];
    if (i % 3 == 0)
      text += fmt::format(
          R"({{"id": "c{}", "messages": [{{"role": "user", "content": "Tell me fact {} about {}."}}], "max_tokens": {}}})",
          i, i, topic, 2 + (i * 7) % 23);
    else if (i % 3 == 1)
      text += fmt::format(R"({{"id": "p{}", "prompt": "Fact {} about {}:", "max_tokens": {}}})", i, i, topic,
                          2 + (i * 5) % 23);
    else
      text += fmt::format(
          R"({{"id": "s{}", "prompt": "A short story about {}:", "max_tokens": {}, "temperature": 0.8, "seed": {}}})",
          i, topic, 2 + (i * 11) % 23, i);
    text += "\n";
  }
  return text;
}

uint64_t line_index(const std::string& line) {
  simdjson::dom::parser parser;
  return uint64_t(parser.parse(line)["index"]);
}

// The input lines a run has finished, as its files say while it runs or after it died:
// the output's complete lines and the journal's.
std::set<uint64_t> finished_lines(const std::filesystem::path& out) {
  std::set<uint64_t> finished;
  if (std::filesystem::exists(out))
    for (const std::string& line : complete_lines(read_file(out))) finished.insert(line_index(line));
  for (const auto& [index, line] : read_journal(journal_path(out)).lines) finished.insert(index);
  return finished;
}

bool process_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

// The input and an uninterrupted run of it, made once for both test cases.
struct KillJob {
  TempDir dir{"pagedgen-kill-resume"};
  std::filesystem::path input = dir / "in.jsonl";
  std::string reference;  // an uninterrupted run's bytes
  std::string reference_stats;

  static const KillJob& get() {
    static const KillJob job;
    return job;
  }

  KillJob() {
    std::ofstream(input) << input_text();
    const CliResult r = run_pagedgen(fmt::format("generate -q -i {} -o {} --stats {}", sh_quote(input),
                                                 sh_quote(dir / "ref.jsonl"), sh_quote(dir / "ref.stats.json")),
                                     dir / "ref.stderr");
    REQUIRE_MESSAGE(r.exit_code == 0, r.stderr_text);
    reference = read_file(dir / "ref.jsonl");
    reference_stats = read_file(dir / "ref.stats.json");
  }

  // Starts `generate` into `out` in the background; returns its pid. Its exit code goes to
  // OUT.rc, its stderr to OUT.stderr.
  pid_t start(const std::filesystem::path& out, const std::string& args = "") const {
    const auto pid_file = out.string() + ".pid";
    run_shell(
        fmt::format("('{}' generate -i {} -o {} --progress-interval 1000 {} 2> {} & echo $! > {}; wait $!; "
                    "echo $? > {}) > /dev/null 2>&1 &",
                    pagedgen_binary().string(), sh_quote(input), sh_quote(out), args,
                    sh_quote(out.string() + ".stderr"), sh_quote(pid_file), sh_quote(out.string() + ".rc")));
    wait_until([&] { return std::filesystem::exists(pid_file) && !read_file(pid_file).empty(); }, 60, "the pid");
    return static_cast<pid_t>(std::stol(read_file(pid_file)));
  }

  // Waits until `out`'s run has finished at least `num_requests` requests, then signals it
  // and waits for it to end; returns the lines finished by then.
  std::set<uint64_t> stop_after(pid_t pid, const std::filesystem::path& out, std::size_t num_requests,
                                int signal) const {
    wait_until([&] { return finished_lines(out).size() >= num_requests || !process_alive(pid); }, 600,
               "requests to finish");
    REQUIRE(::kill(pid, signal) == 0);
    wait_until([&] { return std::filesystem::exists(out.string() + ".rc"); }, 120, "the run to end");
    return finished_lines(out);
  }

  // Σ of a usage figure over the reference's lines not in `finished`.
  int64_t sum_usage_except(const std::set<uint64_t>& finished, const char* key) const {
    int64_t sum = 0;
    for (const std::string& line : complete_lines(reference))
      if (!finished.contains(line_index(line))) sum += json_int(line, "usage", key);
    return sum;
  }
};

}  // namespace

TEST_CASE("SIGKILL after half the requests: the resume computes only the unfinished ones, byte-identical") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const KillJob& job = KillJob::get();
  const auto out = job.dir / "out.jsonl";
  const std::set<uint64_t> finished = job.stop_after(job.start(out, "-q"), out, kNumLines / 2, SIGKILL);
  REQUIRE_MESSAGE(finished.size() < static_cast<std::size_t>(kNumLines), "the run finished before the kill");
  CHECK(finished.size() >= static_cast<std::size_t>(kNumLines / 2));

  const CliResult resumed = run_pagedgen(fmt::format("generate -q -i {} -o {} --resume --stats {}", sh_quote(job.input),
                                                     sh_quote(out), sh_quote(job.dir / "resumed.stats.json")),
                                         job.dir / "resumed.stderr");
  REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.stderr_text);
  CHECK(read_file(out) == job.reference);

  const std::string stats = read_file(job.dir / "resumed.stats.json");
  const int64_t num_unfinished = kNumLines - static_cast<int64_t>(finished.size());
  CHECK(json_int(stats, "requests", "requests") == num_unfinished);
  CHECK(json_int(stats, "coverage", "requests_earlier") == static_cast<int64_t>(finished.size()));
  CHECK(json_int(stats, "tokens", "prompt") == job.sum_usage_except(finished, "prompt_tokens"));
  CHECK(json_int(stats, "tokens", "generated") == job.sum_usage_except(finished, "completion_tokens"));
  MESSAGE(fmt::format(
      "killed after {} of {} requests finished; the resume computed {} requests: {} of the "
      "uninterrupted run's {} generated tokens, {} of its {} prompt tokens ({} computed, vs {})",
      finished.size(), kNumLines, json_int(stats, "requests", "requests"), json_int(stats, "tokens", "generated"),
      json_int(job.reference_stats, "tokens", "generated"), json_int(stats, "tokens", "prompt"),
      json_int(job.reference_stats, "tokens", "prompt"), json_int(stats, "tokens", "prompt_computed"),
      json_int(job.reference_stats, "tokens", "prompt_computed")));
}

TEST_CASE("SIGTERM: exit 4, a summary of what finished and what did not, and a resume to the same bytes") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const KillJob& job = KillJob::get();
  const auto out = job.dir / "term.jsonl";
  const std::set<uint64_t> finished = job.stop_after(job.start(out), out, kNumLines / 4, SIGTERM);
  REQUIRE_MESSAGE(finished.size() < static_cast<std::size_t>(kNumLines), "the run finished before SIGTERM");
  CHECK(read_file(out.string() + ".rc") == "4\n");
  const std::string log = read_file(out.string() + ".stderr");
  INFO(log);
  std::smatch stopped, summary;
  REQUIRE(std::regex_search(
      log, stopped,
      std::regex(R"(stopped by SIGTERM after writing (\d+) lines(, (\d+) more finished lines? kept in '[^']*')?)")));
  const std::size_t num_written = std::stoul(stopped[1].str());
  const std::size_t num_journaled = stopped[3].matched ? std::stoul(stopped[3].str()) : 0;
  CHECK(num_written + num_journaled == finished.size());
  REQUIRE(std::regex_search(
      log, summary,
      std::regex(R"(pagedgen: (\d+) requests \(0 failed, \d+ samples\), \d+ prompt tokens \((\d+) computed)")));
  CHECK(std::stoul(summary[1].str()) == finished.size());
  CHECK(std::stoul(summary[2].str()) > 0);
  CHECK(log.find(fmt::format("the run stopped early, with {} requests read but not finished",
                             kNumLines - static_cast<int>(finished.size()))) != std::string::npos);

  const CliResult resumed =
      run_pagedgen(fmt::format("generate -q -i {} -o {} --resume", sh_quote(job.input), sh_quote(out)),
                   job.dir / "term-resumed.stderr");
  CHECK_MESSAGE(resumed.exit_code == 0, resumed.stderr_text);
  CHECK(read_file(out) == job.reference);
}
