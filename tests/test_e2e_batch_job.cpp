// The batch-job contract of `pagedgen generate` end to end: standard input and output
// carry only lines (logs go to stderr); three shards merged give the single run's bytes and
// stats; a resumed output (torn at several points) ends byte-identical to an uninterrupted
// one, and a resume with other settings is refused; planning windows keep the stats whole.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <regex>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "mixed_job_input.h"
#include "test_paths.h"

using namespace pagedgen::test;

namespace {

constexpr const char* kWindow = "--plan-window 3";  // the default unless a run gives its own

struct BatchJobFixture {
  TempDir dir{"pagedgen-batch-job"};
  std::filesystem::path input = dir / "in.jsonl";
  BatchJobFixture() { std::ofstream(input) << kInput; }

  // `generate` with kFlags into `name`.jsonl (and its stats); returns the exit code.
  int generate(const std::string& name, const std::string& flags = "") const {
    const CliResult r =
        run_pagedgen(fmt::format("generate -q -i '{}' -o '{}' --stats '{}' {} {} {}", input.string(),
                                 (dir / (name + ".jsonl")).string(), (dir / (name + ".stats.json")).string(), kFlags,
                                 flags.find("--plan-window") == std::string::npos ? kWindow : "", flags),
                     dir / (name + ".stderr"));
    INFO(name << ": " << r.stderr_text);
    return r.exit_code;
  }
  std::string output(const std::string& name) const { return read_file(dir / (name + ".jsonl")); }
  std::filesystem::path stats(const std::string& name) const { return dir / (name + ".stats.json"); }
};

}  // namespace

TEST_CASE("batch job: streams, shards + merge, resume, windows") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  BatchJobFixture job;
  REQUIRE(job.generate("single") == 1);  // one bad line
  const std::string single = job.output("single");
  MESSAGE("single run:\n" << single);
  CHECK(std::count(single.begin(), single.end(), '\n') == 10);
  CHECK(json_file_int(job.stats("single"), "requests", "requests") == 10);
  CHECK(json_file_int(job.stats("single"), "requests", "lines") == 12);

  {  // - reads standard input and writes standard output; logs never reach stdout
    const auto out = job.dir / "stdout.jsonl";
    const auto err = job.dir / "stderr.txt";
    const int code = run_shell(
        fmt::format("cat '{}' | '{}' generate -i - -o - --progress-interval 0 {} {} >'{}' 2>'{}'", job.input.string(),
                    pagedgen_binary().string(), kFlags, kWindow, out.string(), err.string()));
    CHECK(code == 1);
    CHECK(read_file(out) == single);
    const std::string log = read_file(err);
    CHECK(log.find("requests") != std::string::npos);  // progress lines and the summary are on stderr
  }

  {  // three shards merged give the single run's bytes and its stats
    for (int k = 0; k < 3; ++k) CHECK(job.generate(fmt::format("shard{}", k), fmt::format("--shard {}/3", k)) <= 1);
    const auto merged = job.dir / "merged.jsonl";
    const auto merged_stats = job.dir / "merged.stats.json";
    const CliResult r = run_pagedgen(
        fmt::format("merge -q -o '{}' --stats '{}' '{}' '{}' '{}' --shard-stats '{}' '{}' '{}'", merged.string(),
                    merged_stats.string(), (job.dir / "shard2.jsonl").string(), (job.dir / "shard0.jsonl").string(),
                    (job.dir / "shard1.jsonl").string(), job.stats("shard0").string(), job.stats("shard1").string(),
                    job.stats("shard2").string()),
        job.dir / "merge.stderr");
    INFO(r.stderr_text);
    CHECK(r.exit_code == 0);
    CHECK(read_file(merged) == single);
    for (auto [object, key] : {std::pair{"requests", "lines"},
                               {"requests", "requests"},
                               {"requests", "failed"},
                               {"requests", "samples"},
                               {"tokens", "prompt"},
                               {"tokens", "generated"},
                               {"tokens", "prompt_cached"},
                               {"blocks", "steps"}}) {
      CAPTURE(key);
      CHECK(json_file_int(merged_stats, object, key) == json_file_int(job.stats("single"), object, key));
    }
    // A missing shard is refused.
    const CliResult partial =
        run_pagedgen(fmt::format("merge -q -o '{}' '{}' '{}'", merged.string(), (job.dir / "shard0.jsonl").string(),
                                 (job.dir / "shard1.jsonl").string()),
                     job.dir / "merge.stderr");
    CHECK(partial.exit_code == 3);
    CHECK(partial.stderr_text.find("the job has 3 shards") != std::string::npos);
  }

  {  // a torn output resumes to the uninterrupted bytes; other settings are refused
    // Cut after 0, 4 and 6 complete lines (up to input line 4, inside a window, and 6, the
    // first of one), each followed by a torn line.
    std::vector<std::size_t> line_ends;
    for (std::size_t p = single.find('\n'); p != std::string::npos; p = single.find('\n', p + 1))
      line_ends.push_back(p + 1);
    for (std::size_t complete : {0, 4, 6}) {
      CAPTURE(complete);
      const std::size_t cut = complete == 0 ? 0 : line_ends[complete - 1];
      // What a run killed there leaves: the single run's settings, not finished.
      std::string manifest = read_file(job.dir / "single.jsonl.manifest.json");
      manifest.replace(manifest.find("\"finished\": true"), 16, "\"finished\": false");
      std::ofstream(job.dir / "resumed.jsonl.manifest.json", std::ios::binary) << manifest;
      std::ofstream(job.dir / "resumed.jsonl", std::ios::binary) << single.substr(0, cut + 17);  // + a torn line
      CHECK(job.generate("resumed", "--resume") == 1);
      CHECK(job.output("resumed") == single);
    }
    // A finished output whose last line was torn afterwards (its manifest still says
    // finished) no longer holds what its run finished with: refused, the file left as it is
    // (test_e2e_merge_checks has the cuts at a line boundary).
    std::filesystem::copy_file(job.dir / "single.jsonl.manifest.json", job.dir / "resumed.jsonl.manifest.json",
                               std::filesystem::copy_options::overwrite_existing);
    const std::string torn = single.substr(0, line_ends[line_ends.size() - 2] + 17);
    std::ofstream(job.dir / "resumed.jsonl", std::ios::binary) << torn;
    CHECK(job.generate("resumed", "--resume") == 3);
    CHECK(job.output("resumed") == torn);
    const CliResult refused =
        run_pagedgen(fmt::format("generate -q -i '{}' -o '{}' --seed 9 {} --max-tokens 5 --resume", job.input.string(),
                                 (job.dir / "resumed.jsonl").string(), kWindow),
                     job.dir / "refused.stderr");
    CHECK(refused.exit_code == 3);
    CHECK(refused.stderr_text.find("max_tokens was 4, now 5") != std::string::npos);
  }

  {  // stats add up over planning windows; the texts do not depend on the window
    REQUIRE(job.generate("one-window", "--plan-window 100") == 1);
    for (auto [object, key] : {std::pair{"requests", "lines"},
                               {"requests", "requests"},
                               {"requests", "failed"},
                               {"requests", "samples"},
                               {"tokens", "prompt"},
                               {"tokens", "generated"}}) {
      CAPTURE(key);
      CHECK(json_file_int(job.stats("one-window"), object, key) == json_file_int(job.stats("single"), object, key));
    }
    static const std::regex cached(R"("cached_tokens":\d+)");
    CHECK(std::regex_replace(job.output("one-window"), cached, "") == std::regex_replace(single, cached, ""));
  }
}
