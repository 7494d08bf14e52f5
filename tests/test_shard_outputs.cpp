// check_shard_outputs: what merge reads and checks before it writes anything. Shards of
// different shard counts (0/2 + 2/3), of two different streams, or that lost lines after
// their runs finished are refused, naming the file; the N shards of one job pass.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>

#include "gguf_writer.h"
#include "io/manifest.h"
#include "job/shard_outputs.h"
#include "plain_record_line.h"
#include "util/error.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

struct Shards {
  TempDir dir{"pagedgen-shard-outputs"};

  // NAME holding the answers to `indices`, with the manifest of a finished run of `shard`
  // reading `input`; `input_read` as a stream's run records it.
  std::filesystem::path write(const std::string& name, const std::string& shard, std::vector<uint64_t> indices,
                              const std::string& input = "bytes=120 fnv1a64=00000000000000aa",
                              std::optional<std::string> input_read = std::nullopt) const {
    const std::filesystem::path path = dir / name;
    std::ofstream file(path, std::ios::binary);
    for (uint64_t index : indices) file << plain_record_line(index);
    file.close();
    Manifest manifest;
    manifest.settings = {{"input", input}, {"seed", "9"}, {"shard", shard}};
    manifest.finished = true;
    manifest.output = measure_output(path);
    manifest.input_read = std::move(input_read);
    write_manifest(manifest_path(path), manifest);
    return path;
  }
};

}  // namespace

TEST_CASE("the N finished shards of one job pass, each checked in full") {
  Shards shards;
  const auto s0 = shards.write("s0", "0/2", {0, 1, 4});
  const auto s1 = shards.write("s1", "1/2", {2, 3});
  const ShardOutputs checked = check_shard_outputs({s1, s0});
  CHECK(checked.num_shards == 2);
  CHECK(checked.num_lines == 5);
  REQUIRE(checked.inputs.size() == 2);
  CHECK(checked.inputs[0].path == s1);
  CHECK(checked.inputs[0].expected == measure_output(s1));
  CHECK(checked.job_key.size() == 16);
}

TEST_CASE("shards of different shard counts are refused") {
  Shards shards;
  const auto a = shards.write("a", "0/2", {0, 1});
  const auto b = shards.write("b", "2/3", {4, 5});
  CHECK_THROWS_WITH_AS(check_shard_outputs({a, b}), doctest::Contains("is shard 2/3 but"), Error);
  CHECK_THROWS_WITH_AS(check_shard_outputs({a, b}), doctest::Contains("is one of 2 shards"), Error);
  const auto c = shards.write("c", "1/3", {2});
  CHECK_THROWS_WITH_AS(check_shard_outputs({b, c}), doctest::Contains("the job has 3 shards"), Error);
  const auto d = shards.write("d", "2/2", {2});
  CHECK_THROWS_WITH_AS(check_shard_outputs({a, d}), doctest::Contains("not K/N with 0 <= K < N"), Error);
  CHECK_THROWS_WITH_AS(check_shard_outputs({a, a}), doctest::Contains("shard 0/2 is given twice"), Error);
}

TEST_CASE("shards read from two different streams are refused; a stream's shards need its fingerprint") {
  Shards shards;
  const auto a = shards.write("a", "0/2", {0}, "standard input", "bytes=10 fnv1a64=000000000000000a");
  const auto b = shards.write("b", "1/2", {1}, "standard input", "bytes=10 fnv1a64=000000000000000b");
  CHECK_THROWS_WITH_AS(check_shard_outputs({a, b}), doctest::Contains("were read from different inputs"), Error);
  const auto same = shards.write("same", "1/2", {1}, "standard input", "bytes=10 fnv1a64=000000000000000a");
  CHECK(check_shard_outputs({a, same}).num_lines == 2);
  const auto unrecorded = shards.write("unrecorded", "1/2", {1}, "standard input");
  CHECK_THROWS_WITH_AS(check_shard_outputs({a, unrecorded}), doctest::Contains("fingerprint its run did not record"),
                       Error);
}

TEST_CASE("a shard that lost whole lines after its run finished is refused") {
  Shards shards;
  const auto s0 = shards.write("s0", "0/2", {0, 1, 4});
  const auto s1 = shards.write("s1", "1/2", {2, 3});
  std::ofstream(s0, std::ios::binary) << plain_record_line(0) << plain_record_line(1);  // cut at a line boundary
  CHECK_THROWS_WITH_AS(check_shard_outputs({s0, s1}), doctest::Contains("changed after its run finished"), Error);
  std::ofstream(s0, std::ios::binary) << plain_record_line(0) << plain_record_line(9);  // a valid line claiming a later index
  CHECK_THROWS_WITH_AS(check_shard_outputs({s0, s1}), doctest::Contains("changed after its run finished"), Error);
}

TEST_CASE("shards without a finished run's record are refused") {
  Shards shards;
  const auto s0 = shards.write("s0", "0/1", {0});
  Manifest manifest = *read_manifest(manifest_path(s0));
  manifest.output.reset();  // as written by pagedgen before the record
  write_manifest(manifest_path(s0), manifest);
  CHECK_THROWS_WITH_AS(check_shard_outputs({s0}), doctest::Contains("did not record its output's lines"), Error);
  manifest.finished = false;
  write_manifest(manifest_path(s0), manifest);
  CHECK_THROWS_WITH_AS(check_shard_outputs({s0}), doctest::Contains("is not finished"), Error);
  std::filesystem::remove(manifest_path(s0));
  CHECK_THROWS_WITH_AS(check_shard_outputs({s0}), doctest::Contains("has no manifest"), Error);
}
