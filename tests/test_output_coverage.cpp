// OutputCoverage: an output's lines, size and hash, measured as scan_file measures a file,
// and a change named when an output lost whole lines (cut at a line boundary) or had a
// line replaced by one of the same length claiming a later input line.
#include <doctest/doctest.h>

#include <fstream>

#include "gguf_writer.h"
#include "io/output_coverage.h"
#include "plain_record_line.h"
#include "util/error.h"
#include "util/file_fingerprint.h"

using namespace pagedgen;
using namespace pagedgen::test;

TEST_CASE("an output's lines, bytes and hash") {
  TempDir dir("pagedgen-output-coverage");
  const std::string text = plain_record_line(0) + plain_record_line(2) + plain_record_line(3);
  std::ofstream(dir / "out.jsonl", std::ios::binary) << text;
  const OutputCoverage coverage = measure_output(dir / "out.jsonl");
  CHECK(coverage.num_lines == 3);
  CHECK(coverage.num_bytes == text.size());
  CHECK(coverage.hash == scan_file(dir / "out.jsonl").hash);
  CHECK(coverage.describe() == fmt::format("3 lines, {} bytes, fnv1a64 {:016x}", text.size(), coverage.hash));
  CHECK(describe_coverage_change(coverage, measure_output(dir / "out.jsonl")) == std::nullopt);
  CHECK_THROWS_AS(measure_output(dir / "absent.jsonl"), Error);
}

TEST_CASE("lines lost or replaced after the run finished are named") {
  TempDir dir("pagedgen-output-coverage-change");
  std::ofstream(dir / "out.jsonl", std::ios::binary) << plain_record_line(0) << plain_record_line(2) << plain_record_line(3);
  const OutputCoverage finished = measure_output(dir / "out.jsonl");

  std::ofstream(dir / "out.jsonl", std::ios::binary) << plain_record_line(0) << plain_record_line(2);  // cut at a line boundary
  const std::optional<std::string> cut = describe_coverage_change(finished, measure_output(dir / "out.jsonl"));
  REQUIRE(cut);
  CHECK(cut->starts_with("it holds 2 lines, "));
  CHECK(cut->find("; its run finished with 3 lines, ") != std::string::npos);

  // The answer to input line 3 replaced by a line claiming input line 5: same count, same
  // size, still in input order.
  std::ofstream(dir / "out.jsonl", std::ios::binary) << plain_record_line(0) << plain_record_line(2) << plain_record_line(5);
  const OutputCoverage replaced = measure_output(dir / "out.jsonl");
  CHECK(replaced.num_lines == finished.num_lines);
  CHECK(replaced.num_bytes == finished.num_bytes);
  CHECK(describe_coverage_change(finished, replaced) != std::nullopt);
}
