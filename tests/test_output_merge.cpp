// merge_outputs: shard files joined in input order, and the ways shards can be wrong
// (a torn or foreign line, lines out of order, the same input line twice).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "gguf_writer.h"
#include "io/output_coverage.h"
#include "io/output_merge.h"
#include "plain_record_line.h"
#include "util/error.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

std::string batch(uint64_t index) { return "{\"id\":\"batch_req_" + std::to_string(index) + "\"}\n"; }

}  // namespace

TEST_CASE("shard outputs merge into input order") {
  TempDir dir("pagedgen-merge");
  std::ofstream(dir / "s0") << plain_record_line(0) << plain_record_line(1) << plain_record_line(6);
  std::ofstream(dir / "s1") << plain_record_line(2) << plain_record_line(3) << plain_record_line(8);
  std::ofstream(dir / "s2");  // a shard with no lines
  std::ostringstream out;
  CHECK(merge_outputs({dir / "s2", dir / "s1", dir / "s0"}, out) == 6);
  CHECK(out.str() == plain_record_line(0) + plain_record_line(1) + plain_record_line(2) + plain_record_line(3) + plain_record_line(6) + plain_record_line(8));

  std::ofstream(dir / "b0") << batch(1) << batch(4);
  std::ofstream(dir / "b1") << batch(2);
  std::ostringstream merged_batch;
  merge_outputs({dir / "b0", dir / "b1"}, merged_batch);
  CHECK(merged_batch.str() == batch(1) + batch(2) + batch(4));
}

TEST_CASE("bad shard outputs are refused with the file and line") {
  TempDir dir("pagedgen-merge-bad");
  std::ofstream(dir / "ok") << plain_record_line(0) << plain_record_line(5);
  std::ofstream(dir / "torn") << plain_record_line(1) << "{\"id\":null,\"ind";
  std::ofstream(dir / "order") << plain_record_line(3) << plain_record_line(2);
  std::ostringstream out;
  CHECK_THROWS_WITH_AS(merge_outputs({dir / "ok", dir / "torn"}, out), doctest::Contains("line 2 of '"), Error);
  CHECK_THROWS_WITH_AS(merge_outputs({dir / "order"}, out),
                       doctest::Contains("answers input line 2 after input line 3"), Error);
  CHECK_THROWS_WITH_AS(merge_outputs({dir / "ok", dir / "ok"}, out), doctest::Contains("is answered in both"), Error);
}

TEST_CASE("with their records, shards that changed since their runs finished are refused, and nothing written") {
  TempDir dir("pagedgen-merge-records");
  std::ofstream(dir / "s0", std::ios::binary) << plain_record_line(0) << plain_record_line(1) << plain_record_line(6);
  std::ofstream(dir / "s1", std::ios::binary) << plain_record_line(2) << plain_record_line(3);
  const OutputCoverage s0 = measure_output(dir / "s0"), s1 = measure_output(dir / "s1");
  CHECK(merge_outputs({{dir / "s0", s0}, {dir / "s1", s1}}, nullptr) == 5);  // a check: nothing written
  std::ostringstream out;
  CHECK(merge_outputs({{dir / "s0", s0}, {dir / "s1", s1}}, &out) == 5);
  CHECK(out.str() == plain_record_line(0) + plain_record_line(1) + plain_record_line(2) + plain_record_line(3) + plain_record_line(6));

  std::ofstream(dir / "s0", std::ios::binary) << plain_record_line(0) << plain_record_line(1);  // its last line lost
  CHECK_THROWS_WITH_AS(merge_outputs({{dir / "s0", s0}, {dir / "s1", s1}}, nullptr),
                       doctest::Contains("changed after its run finished (it holds 2 lines"), Error);
  std::ofstream(dir / "s0", std::ios::binary) << plain_record_line(0) << plain_record_line(1) << plain_record_line(8);  // a later line in its place
  CHECK_THROWS_WITH_AS(merge_outputs({{dir / "s0", s0}, {dir / "s1", s1}}, nullptr),
                       doctest::Contains("changed after its run finished"), Error);
}
