// What merge and --resume check before they write anything (issue 32, defect 5): shards of
// different shard counts (0/2 + 2/3), shards of two different streams, and a finished
// output that lost whole lines (cut at a line boundary, or a line gone with a valid line
// after it) or was torn are refused with exit 3, an existing -o and the damaged output left as they
// were; the shards of one job, from a file or from one stream, still merge.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "io/manifest.h"
#include "mixed_job_input.h"
#include "test_paths.h"
#include "util/file_fingerprint.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

constexpr const char* kEarlier = "an earlier merged output\n";

struct MergeJob {
  TempDir dir{"pagedgen-merge-checks"};
  std::filesystem::path input = dir / "in.jsonl";
  std::filesystem::path merged = dir / "merged.jsonl";
  MergeJob() {
    std::ofstream(input) << kInput;
    std::ofstream(merged) << kEarlier;
  }

  std::filesystem::path path(const std::string& name) const { return dir / name; }
  // `generate -q` of shard SHARD into NAME.jsonl, reading `source` ("-i FILE" or "-i - < FILE").
  CliResult generate(const std::string& name, const std::string& shard, const std::string& source,
                     const std::string& args = "") const {
    const CliResult r = run_pagedgen(fmt::format("generate -q {} -o {} --shard {} {} {}", source,
                                                 sh_quote(path(name + ".jsonl")), shard, kFlags, args),
                                     dir / (name + ".stderr"));
    INFO(name << ": " << r.stderr_text);
    return r;
  }
  CliResult generate_file(const std::string& name, const std::string& shard, const std::string& args = "") const {
    return generate(name, shard, "-i " + sh_quote(input), args);
  }
  CliResult merge(const std::vector<std::string>& names) const {
    std::string shards;
    for (const std::string& name : names) shards += " " + sh_quote(path(name + ".jsonl"));
    return run_pagedgen(fmt::format("merge -q -o {}{}", sh_quote(merged), shards), dir / "merge.stderr");
  }
};

}  // namespace

TEST_CASE("merge refuses shards of different shard counts before touching -o") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  MergeJob job;
  REQUIRE(job.generate_file("s0", "0/2").exit_code == 1);  // the bad line
  REQUIRE(job.generate_file("s1", "1/2").exit_code <= 1);
  REQUIRE(job.generate_file("t2", "2/3").exit_code <= 1);
  // 0/2 owns input lines [0, 6), 2/3 lines [8, 12): lines 6 and 7 would be missing.
  const CliResult mixed = job.merge({"s0", "t2"});
  CHECK(mixed.exit_code == 3);
  CHECK_MESSAGE(says(mixed, "is shard 2/3 but"), mixed.stderr_text);
  CHECK(read_file(job.merged) == kEarlier);

  const CliResult merged = job.merge({"s1", "s0"});
  REQUIRE_MESSAGE(merged.exit_code == 0, merged.stderr_text);
  CHECK(complete_lines(read_file(job.merged)).size() == 10);  // 12 lines, 2 blank
}

TEST_CASE("a finished output that lost whole lines is refused by --resume and merge, files left as they were") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  MergeJob job;
  REQUIRE(job.generate_file("s0", "0/2").exit_code == 1);
  REQUIRE(job.generate_file("s1", "1/2").exit_code <= 1);
  const std::vector<std::string> lines = complete_lines(read_file(job.path("s0.jsonl")));
  REQUIRE(lines.size() == 5);  // input lines 0 1 3 4 5
  std::string cut, gap;        // without the last line; without the answer to input line 4
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i + 1 < lines.size()) cut += lines[i] + "\n";
    if (i != 3) gap += lines[i] + "\n";
  }
  // Torn inside its last line: merge failed on it before, but only after emptying -o.
  const std::string torn = cut + lines.back().substr(0, 20);
  const std::string changed = "changed after its run finished", not_output = "is not a pagedgen output line";
  const std::vector<std::pair<std::string, std::string>> cases = {{cut, changed}, {gap, changed}, {torn, not_output}};
  for (const auto& [damaged_text, merge_says] : cases) {
    const std::string& damaged = damaged_text;
    CAPTURE(damaged);
    std::ofstream(job.path("s0.jsonl"), std::ios::binary) << damaged;
    const CliResult resumed = job.generate_file("s0", "0/2", "--resume");
    CHECK(resumed.exit_code == 3);
    CHECK_MESSAGE(says(resumed, "changed after its run finished"), resumed.stderr_text);
    CHECK(read_file(job.path("s0.jsonl")) == damaged);
    const CliResult merged = job.merge({"s0", "s1"});
    CHECK(merged.exit_code == 3);
    CHECK_MESSAGE(says(merged, merge_says), merged.stderr_text);
    CHECK(read_file(job.merged) == kEarlier);
  }
}

TEST_CASE("shards read from standard input record what they read; two different streams do not merge") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  MergeJob job;
  std::string other = kInput;
  other.replace(other.find("France"), 6, "Norway");
  std::ofstream(job.path("other.jsonl")) << other;
  // A stream's shards take windows: 0/2 owns window 0, every line here; 1/2 none.
  REQUIRE(job.generate("a", "0/2", "-i - < " + sh_quote(job.input)).exit_code == 1);
  REQUIRE(job.generate("b", "1/2", "-i - < " + sh_quote(job.path("other.jsonl"))).exit_code == 0);
  const std::optional<Manifest> a = read_manifest(manifest_path(job.path("a.jsonl")));
  REQUIRE(a);
  CHECK(a->input_read == scan_file(job.input).fingerprint());
  const CliResult foreign = job.merge({"a", "b"});
  CHECK(foreign.exit_code == 3);
  CHECK_MESSAGE(says(foreign, "were read from different inputs"), foreign.stderr_text);
  CHECK(read_file(job.merged) == kEarlier);

  REQUIRE(job.generate("b", "1/2", "-i - < " + sh_quote(job.input)).exit_code == 0);
  const CliResult merged = job.merge({"a", "b"});
  REQUIRE_MESSAGE(merged.exit_code == 0, merged.stderr_text);
  CHECK(read_file(job.merged) == read_file(job.path("a.jsonl")));
}
