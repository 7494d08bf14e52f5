// The batch job's files under real job patterns: an output that is the input is refused; a
// second process on a locked output fails at once; a resumed run takes what the journal
// holds and computes only the rest, saying what its stats cover; small inputs spread over
// every shard, and merge refuses stats that are missing, duplicated or of another job; a
// model changed after its first 8 MiB is not resumed; a failed startup leaves no file
// behind; messages say why; a FIFO or /dev/null reads like standard input; a full disk's
// message counts only complete lines.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
#include <thread>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "job/run_journal.h"
#include "mixed_job_input.h"
#include "test_paths.h"
#include "util/file_fingerprint.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

std::string cached_tokens_removed(const std::string& text) {
  static const std::regex cached(R"("cached_tokens":\d+)");
  return std::regex_replace(text, cached, "");
}

// Kills the process whose pid a file holds, when the scope ends (a writer left waiting).
struct KillOnExit {
  std::filesystem::path pid_file;
  ~KillOnExit() {
    if (!std::filesystem::exists(pid_file)) return;
    const int ignored = std::system(fmt::format("kill $(cat '{}') 2>/dev/null", pid_file.string()).c_str());
    (void)ignored;
  }
};

struct ReliabilityJob {
  TempDir dir{"pagedgen-job-reliability"};
  std::filesystem::path input = dir / "in.jsonl";
  ReliabilityJob() { std::ofstream(input) << kInput; }

  std::filesystem::path path(const std::string& name) const { return dir / name; }
  // `pagedgen generate -q -i IN` with kFlags and `args`; stderr in NAME.stderr.
  CliResult generate(const std::string& name, const std::string& args) const {
    const CliResult r =
        run_pagedgen(fmt::format("generate -q -i {} {} {}", sh_quote(input), kFlags, args), dir / (name + ".stderr"));
    INFO(name << ": " << r.stderr_text);
    return r;
  }
  // A whole run into NAME.jsonl, with NAME.stats.json.
  std::string reference(const std::string& name, const std::string& args = "") const {
    const CliResult r = generate(name, fmt::format("-o {} --stats {} {}", sh_quote(path(name + ".jsonl")),
                                                   sh_quote(path(name + ".stats.json")), args));
    REQUIRE_MESSAGE(r.exit_code == 1, r.stderr_text);  // the bad line
    return read_file(path(name + ".jsonl"));
  }
};

}  // namespace

TEST_CASE("an output that is the input, by any name, is refused and the input kept") {
  ReliabilityJob job;
  REQUIRE(::link(job.input.c_str(), job.path("link.jsonl").c_str()) == 0);
  for (const std::string& args :
       {fmt::format("-o {}", sh_quote(job.input)), fmt::format("-o {}", sh_quote(job.path("link.jsonl"))),
        fmt::format("-o {} --stats {}", sh_quote(job.path("out.jsonl")), sh_quote(job.input))}) {
    CAPTURE(args);
    const CliResult r = job.generate("same", args);
    CHECK(r.exit_code == 2);
    CHECK(r.stderr_text.find("are one file") != std::string::npos);
    CHECK(read_file(job.input) == kInput);
  }
  // Names of files that do not exist yet, written twice: compared by name, before any is written.
  for (const std::string& args :
       {fmt::format("-o {} --stats {}", sh_quote(job.path("fresh.jsonl")), sh_quote(job.path("fresh.jsonl"))),
        fmt::format("-o {} --stats {} --report {}", sh_quote(job.path("fresh.jsonl")), sh_quote(job.path("s.json")),
                    sh_quote(job.path("./s.json"))),
        fmt::format("-o {} --stats {}", sh_quote(job.path("fresh.jsonl")),
                    sh_quote(job.path("fresh.jsonl.manifest.json"))),
        fmt::format("-o {} --report {}", sh_quote(job.path("fresh.jsonl")),
                    sh_quote(job.path("fresh.jsonl.journal")))}) {
    CAPTURE(args);
    const CliResult r = job.generate("fresh", args);
    CHECK(r.exit_code == 2);
    CHECK(r.stderr_text.find("are one file") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(job.path("fresh.jsonl")));
    CHECK_FALSE(std::filesystem::exists(job.path("s.json")));
  }
  // Standard input redirected from the output file.
  const int code =
      run_shell(fmt::format("'{}' generate -q -i - -o {} {} < {} 2> {}", pagedgen_binary().string(),
                            sh_quote(job.input), kFlags, sh_quote(job.input), sh_quote(job.path("stdin.stderr"))));
  CHECK(code == 2);
  CHECK(read_file(job.input) == kInput);
  CHECK_FALSE(std::filesystem::exists(job.path("out.jsonl")));
}

TEST_CASE("a second process on a locked output fails at once; the first's output stays whole") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  ReliabilityJob job;
  const std::string reference = job.reference("ref");
  // The first run reads a FIFO whose writer sends nothing yet: it holds the lock, waiting.
  const auto fifo = job.path("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  run_shell(fmt::format("sleep 600 > {} & echo $! > {}", sh_quote(fifo), sh_quote(job.path("writer.pid"))));
  const KillOnExit writer{job.path("writer.pid")};
  const auto out = job.path("out.jsonl");
  run_shell(fmt::format("('{}' generate -q -i {} -o {} {}; echo $? > {}) 2> {} &", pagedgen_binary().string(),
                        sh_quote(fifo), sh_quote(out), kFlags, sh_quote(job.path("first.rc")),
                        sh_quote(job.path("first.stderr"))));
  wait_until([&] { return std::filesystem::exists(job.path("out.jsonl.manifest.json")); }, 300, "the first run");

  for (const char* extra : {"", "--resume"}) {
    CAPTURE(extra);
    const CliResult second = job.generate("second", fmt::format("-o {} {}", sh_quote(out), extra));
    CHECK(second.exit_code == 3);
    CHECK(second.stderr_text.find("is being written by another pagedgen process") != std::string::npos);
  }
  run_shell(fmt::format("cat {} > {}; kill $(cat {}); rm {}", sh_quote(job.input), sh_quote(fifo),
                        sh_quote(job.path("writer.pid")), sh_quote(job.path("writer.pid"))));
  wait_until([&] { return std::filesystem::exists(job.path("first.rc")) && !read_file(job.path("first.rc")).empty(); },
             300, "the first run to end");
  CHECK(read_file(job.path("first.rc")) == "1\n");
  CHECK(read_file(out) == reference);
}

TEST_CASE("a resume takes the journal's lines and cached tokens and computes only the rest") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  ReliabilityJob job;
  const std::string reference = job.reference("ref");
  const std::vector<std::string> lines = complete_lines(reference);  // input lines 0 1 3 4 5 6 7 9 10 11
  REQUIRE(lines.size() == 10);
  // What a run killed with input lines 0 and 1 written, 5 and 9 finished out of order, and
  // line 4 started with 7 cached prompt tokens (a made-up figure, to see it reported) leaves.
  const auto out = job.path("out.jsonl");
  std::string manifest = read_file(job.path("ref.jsonl.manifest.json"));
  manifest.replace(manifest.find("\"finished\": true"), 16, "\"finished\": false");
  std::ofstream(job.path("out.jsonl.manifest.json"), std::ios::binary) << manifest;
  std::ofstream(out, std::ios::binary) << lines[0] << "\n" << lines[1] << "\n" << lines[2].substr(0, 20);
  {
    JournalWriter journal(journal_path(out), 0, 1.0);
    journal.add_admission(4, 7);
    journal.add_line(5, lines[4]);
    journal.add_line(9, lines[7]);
    journal.commit();
  }
  const CliResult r = job.generate(
      "resumed", fmt::format("-o {} --resume --stats {}", sh_quote(out), sh_quote(job.path("resumed.stats.json"))));
  CHECK(r.exit_code == 1);
  std::string expected = reference;
  const std::size_t line4 = expected.find("\"index\":4,");
  expected.replace(expected.find("\"cached_tokens\":0", line4), 17, "\"cached_tokens\":7");
  CHECK(read_file(out) == expected);
  CHECK_FALSE(std::filesystem::exists(journal_path(out)));  // removed once finished

  // The stats cover the 6 requests this run computed (lines 3 4 6 7 10 11), and say so.
  const std::string stats = read_file(job.path("resumed.stats.json"));
  CHECK(json_int(stats, "requests", "requests") == 6);
  CHECK(json_int(stats, "coverage", "requests_earlier") == 4);
  CHECK(json_int(stats, "coverage", "requests_unfinished") == 0);
  int64_t generated = 0;
  for (std::size_t i : {2, 3, 5, 6, 8, 9}) generated += json_int(lines[i], "usage", "completion_tokens");
  CHECK(json_int(stats, "tokens", "generated") == generated);
}

TEST_CASE("small inputs spread over every shard; merge refuses stats missing, twice or of another job") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  ReliabilityJob job;
  const std::string single = job.reference("single");  // one window (--plan-window 10000)
  std::string outputs, stats;
  for (int k = 0; k < 3; ++k) {
    const std::string name = fmt::format("shard{}", k);
    const CliResult r =
        job.generate(name, fmt::format("-o {} --stats {} --shard {}/3", sh_quote(job.path(name + ".jsonl")),
                                       sh_quote(job.path(name + ".stats.json")), k));
    CHECK(r.exit_code <= 1);
    // Lines [0,4) [4,8) [8,12): 3, 4 and 3 requests.
    CHECK(complete_lines(read_file(job.path(name + ".jsonl"))).size() == (k == 1 ? 4u : 3u));
    outputs += " " + sh_quote(job.path(name + ".jsonl"));
    stats += " " + sh_quote(job.path(name + ".stats.json"));
  }
  const auto merge = [&](const std::string& stats_files) {
    return run_pagedgen(fmt::format("merge -q -o {} --stats {} {} --shard-stats {}", sh_quote(job.path("merged.jsonl")),
                                    sh_quote(job.path("merged.stats.json")), outputs, stats_files),
                        job.dir / "merge.stderr");
  };
  const CliResult merged = merge(stats);
  REQUIRE_MESSAGE(merged.exit_code == 0, merged.stderr_text);
  // Texts are the single run's; cached_tokens may differ (prefixes are shared within a shard).
  CHECK(cached_tokens_removed(read_file(job.path("merged.jsonl"))) == cached_tokens_removed(single));
  CHECK(json_int(read_file(job.path("merged.stats.json")), "requests", "requests") == 10);

  const std::string s0 = sh_quote(job.path("shard0.stats.json")), s1 = sh_quote(job.path("shard1.stats.json"));
  const CliResult missing = merge(s0 + " " + s1);
  CHECK(missing.exit_code == 3);
  CHECK(missing.stderr_text.find("no stats file of shard 2/3") != std::string::npos);
  const CliResult twice = merge(s0 + " " + s1 + " " + s1);
  CHECK(twice.exit_code == 3);
  CHECK(twice.stderr_text.find("are both of shard 1/3") != std::string::npos);
  const CliResult foreign_run = job.generate(
      "foreign", fmt::format("-o {} --stats {} --shard 2/3 --temperature 0.5", sh_quote(job.path("foreign.jsonl")),
                             sh_quote(job.path("foreign.stats.json"))));
  CHECK(foreign_run.exit_code <= 1);
  const CliResult foreign = merge(s0 + " " + s1 + " " + sh_quote(job.path("foreign.stats.json")));
  CHECK(foreign.exit_code == 3);
  CHECK(foreign.stderr_text.find("is of another job") != std::string::npos);
}

TEST_CASE("a resume refuses a model whose weights changed after the first 8 MiB") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  ReliabilityJob job;
  const auto model = job.path("model.gguf");
  std::filesystem::copy_file(*default_model(), model);
  const uint64_t size = std::filesystem::file_size(model);
  REQUIRE(size > kFnvModelMaxBytes);
  const std::string args = fmt::format("-m {} -o {}", sh_quote(model), sh_quote(job.path("out.jsonl")));
  REQUIRE(job.generate("first", args).exit_code == 1);
  {  // A manifest of version 1 (446a6bf .. 7e70570) fingerprinted only the first 8 MiB: refused.
    const auto manifest = job.path("out.jsonl.manifest.json");
    const std::string v2 = read_file(manifest);
    std::string v1 = v2;
    v1.replace(v1.find("\"pagedgen_manifest\": 2"), 22, "\"pagedgen_manifest\": 1");
    std::ofstream(manifest, std::ios::binary) << v1;
    const CliResult old = job.generate("old", args + " --resume");
    CHECK(old.exit_code == 3);
    CHECK(old.stderr_text.find("was written by an older pagedgen (manifest version 1)") != std::string::npos);
    std::ofstream(manifest, std::ios::binary) << v2;
  }
  {  // One bit of one byte in the middle of the file, far after the first 8 MiB.
    std::fstream file(model, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(static_cast<std::streamoff>(size / 2 + 5));
    const char byte = static_cast<char>(file.get());
    file.seekp(static_cast<std::streamoff>(size / 2 + 5));
    file.put(static_cast<char>(byte ^ 1));
  }
  const CliResult resumed = job.generate("resumed", args + " --resume");
  CHECK(resumed.exit_code == 3);
  CHECK(resumed.stderr_text.find("--resume: ") != std::string::npos);
  CHECK(resumed.stderr_text.find("(model was bytes=") != std::string::npos);
}

TEST_CASE("a run that fails before it starts leaves no output, manifest or journal behind") {
  ReliabilityJob job;
  const auto bad_model = job.path("bad.gguf");
  std::ofstream(bad_model, std::ios::binary) << "GGUF, but nothing a reader can use";
  const auto out = job.path("new.jsonl");
  const CliResult r = job.generate("bad-model", fmt::format("-m {} -o {}", sh_quote(bad_model), sh_quote(out)));
  CHECK(r.exit_code == 3);
  for (const std::string suffix : {"", ".manifest.json", ".journal"})
    CHECK_FALSE(std::filesystem::exists(out.string() + suffix));
  // An earlier output is left as it was, not emptied.
  const auto old = job.path("old.jsonl");
  std::ofstream(old, std::ios::binary) << "{\"id\":null,\"index\":0}\n";
  CHECK(job.generate("bad-model-old", fmt::format("-m {} -o {}", sh_quote(bad_model), sh_quote(old))).exit_code == 3);
  CHECK(read_file(old) == "{\"id\":null,\"index\":0}\n");
  CHECK_FALSE(std::filesystem::exists(old.string() + ".manifest.json"));
}

TEST_CASE("messages say why; a FIFO or /dev/null input reads like standard input") {
  ReliabilityJob job;
  const CliResult no_model =
      job.generate("no-model", fmt::format("-m /nonexistent -o {}", sh_quote(job.path("o.jsonl"))));
  CHECK(no_model.exit_code == 3);
  CHECK(no_model.stderr_text.find("No such file or directory") != std::string::npos);
  const CliResult no_input = run_pagedgen(
      fmt::format("generate -q -i {} -o {}", sh_quote(job.path("absent.jsonl")), sh_quote(job.path("o.jsonl"))),
      job.dir / "no-input.stderr");
  CHECK(no_input.exit_code == 3);
  CHECK(no_input.stderr_text.find("cannot open the input file") != std::string::npos);
  CHECK(no_input.stderr_text.find("No such file or directory") != std::string::npos);
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();

  const CliResult null_input = run_pagedgen(
      fmt::format("generate -q -i /dev/null -o {}", sh_quote(job.path("null.jsonl"))), job.dir / "null.stderr");
  CHECK_MESSAGE(null_input.exit_code == 0, null_input.stderr_text);
  CHECK(read_file(job.path("null.jsonl")).empty());

  const std::string reference = job.reference("ref");
  const auto fifo = job.path("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  run_shell(fmt::format("cat {} > {} &", sh_quote(job.input), sh_quote(fifo)));
  const CliResult from_fifo =
      run_pagedgen(fmt::format("generate -q -i {} -o {} {}", sh_quote(fifo), sh_quote(job.path("fifo.jsonl")), kFlags),
                   job.dir / "fifo.stderr");
  CHECK_MESSAGE(from_fifo.exit_code == 1, from_fifo.stderr_text);
  CHECK(read_file(job.path("fifo.jsonl")) == reference);
}

TEST_CASE("a full disk's message counts only the lines complete in the file") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  ReliabilityJob job;
  {
    std::ofstream input(job.input);
    for (int i = 0; i < 40; ++i)
      input << fmt::format("{{\"id\": \"q{}\", \"prompt\": \"Question {}: what is {} plus {}?\"}}\n", i, i, i, i);
  }
  // A file size limit of 4 KiB fails the writes part way, as a full disk does (EFBIG, not ENOSPC).
  const auto out = job.path("out.jsonl");
  const int code = run_shell(fmt::format("trap '' XFSZ; ulimit -f 4; '{}' generate -q -i {} -o {} --max-tokens 8 2> {}",
                                         pagedgen_binary().string(), sh_quote(job.input), sh_quote(out),
                                         sh_quote(job.path("full.stderr"))));
  const std::string message = read_file(job.path("full.stderr"));
  INFO(message);
  CHECK(code == 3);
  std::smatch match;
  REQUIRE(std::regex_search(message, match, std::regex(R"((\d+) lines are complete in the output)")));
  const std::string written = read_file(out);
  CHECK(std::stoul(match[1].str()) == static_cast<unsigned long>(std::count(written.begin(), written.end(), '\n')));
  CHECK(message.find("File too large") != std::string::npos);
}
