// The HTML reports and the KV timeline behind them: the timeline keeps every stride-th
// step and thins itself past its cap; the pages are self-contained (no script, no
// external asset) and carry one chart point per timeline point.
#include <doctest/doctest.h>

#include <regex>

#include "job/run_stats.h"
#include "report/html_report.h"

using namespace pagedgen;

namespace {

RunStats stats_with_steps(int64_t num_steps) {
  RunStats stats;
  stats.engine.block_size = 4;
  stats.engine.kv_bytes_per_block = 4096;
  stats.job.model = "m<1>.gguf";
  for (int64_t i = 0; i < num_steps; ++i) {
    KvSnapshot s;
    s.used_blocks = i % 7;
    s.allocated_slots = 4 * s.used_blocks;
    s.filled_slots = s.allocated_slots - (i % 3);
    s.naive_request_slots = 40;
    stats.engine.add_snapshot(s);
  }
  return stats;
}

std::size_t num_occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("the timeline keeps every step until its cap, then every second, fourth, ... step") {
  const RunStats few = stats_with_steps(10);
  CHECK(few.engine.timeline.size() == 10);
  CHECK(few.engine.timeline_stride == 1);
  CHECK(few.engine.timeline[9].step == 9);
  CHECK(few.engine.timeline[9].kv.used_blocks == 2);

  const RunStats many = stats_with_steps(5000);  // > 2 * 2048: stride 4
  CHECK(many.engine.timeline_stride == 4);
  CHECK(many.engine.timeline.size() == 1250);
  for (std::size_t i = 0; i < many.engine.timeline.size(); ++i) {
    CHECK(many.engine.timeline[i].step == static_cast<int64_t>(4 * i));
    CHECK(many.engine.timeline[i].kv.used_blocks == (4 * static_cast<int64_t>(i)) % 7);
  }
  CHECK(many.engine.num_steps == 5000);  // the sums still count every step
}

TEST_CASE("run and sweep reports are self-contained pages with one chart point per timeline point") {
  const RunStats stats = stats_with_steps(25);
  const std::string run = run_report_html(stats, "in & out.jsonl");
  CHECK(run.starts_with("<!DOCTYPE html>"));
  CHECK(num_occurrences(run, "<script") == 0);
  CHECK(num_occurrences(run, "src=") == 0);
  CHECK(num_occurrences(run, "href=") == 0);
  CHECK(num_occurrences(run, "url(") == 0);
  CHECK(run.find("in &amp; out.jsonl") != std::string::npos);
  CHECK(run.find("m&lt;1&gt;.gguf") != std::string::npos);
  // Four series (allocated, holding, shared, naive), 25 points each.
  const std::regex polyline(R"re(<polyline[^>]*points="([^"]*)")re");
  int num_lines = 0;
  for (auto it = std::sregex_iterator(run.begin(), run.end(), polyline); it != std::sregex_iterator(); ++it) {
    const std::string points = (*it)[1];
    CHECK(num_occurrences(points, ",") == 25);
    ++num_lines;
  }
  CHECK(num_lines == 4);

  const std::string sweep = sweep_report_html({{8, stats, 1.5}, {16, stats_with_steps(5), 2.5}}, true, "x");
  CHECK(num_occurrences(sweep, "<script") == 0);
  CHECK(num_occurrences(sweep, "<polyline") == 8);  // a timeline per size
  CHECK(num_occurrences(sweep, "<rect") >= 8);      // 4 bars per size (plus legend swatches)
  CHECK(sweep.find("identical across block sizes: <b>yes</b>") != std::string::npos);
}
