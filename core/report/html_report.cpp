#include "report/html_report.h"

#include <fmt/format.h>

#include "report/svg_chart.h"
#include "util/byte_units.h"
#include "util/html_escape.h"

namespace pagedgen {

namespace {

std::string page(const std::string& title, const std::string& body) {
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{0}</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #222; max-width: 940px; }}
h1 {{ font-size: 20px; }} h2 {{ font-size: 16px; margin-top: 28px; }}
table {{ border-collapse: collapse; font-size: 13px; }}
td, th {{ border-bottom: 1px solid #ddd; padding: 3px 10px; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
p.note {{ font-size: 12px; color: #555; }}
</style></head><body>
<h1>{0}</h1>
{1}
</body></html>
)",
                     html_escape(title), body);
}

// Blocks over the run: allocated, holding tokens (filled slots / block size), shared, and
// naive reservation (prompt + max_tokens per sequence) in block units.
std::string timeline_chart(const EngineStats& s) {
  const double bs = static_cast<double>(std::max<int64_t>(1, s.block_size));
  LineSeries allocated{"allocated blocks", "#1f77b4", {}, {}, false};
  LineSeries holding{"holding tokens (filled slots / block size)", "#2ca02c", {}, {}, false};
  LineSeries shared{"shared blocks (count > 1)", "#9467bd", {}, {}, false};
  LineSeries naive{"naive: prompt + max_tokens per sequence", "#d62728", {}, {}, true};
  for (const KvTimelinePoint& p : s.timeline) {
    const auto step = static_cast<double>(p.step);
    for (LineSeries* line : {&allocated, &holding, &shared, &naive}) line->x.push_back(step);
    allocated.y.push_back(static_cast<double>(p.kv.used_blocks));
    holding.y.push_back(static_cast<double>(p.kv.filled_slots) / bs);
    shared.y.push_back(static_cast<double>(p.kv.shared_blocks));
    naive.y.push_back(static_cast<double>(p.kv.naive_request_slots) / bs);
  }
  return svg_line_chart({allocated, holding, shared, naive}, "engine step", "KV blocks");
}

std::string figures_table(const EngineStats& s) {
  std::string rows;
  const auto row = [&](const std::string& name, const std::string& value) {
    rows += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", html_escape(name), html_escape(value));
  };
  row("block size",
      fmt::format("{} tokens ({})", s.block_size, format_bytes(static_cast<uint64_t>(s.kv_bytes_per_block))));
  row("pool", fmt::format("{} blocks", s.num_pool_blocks));
  row("peak blocks in use",
      fmt::format("{} ({})", s.peak_used_blocks, format_bytes(static_cast<uint64_t>(s.peak_kv_bytes))));
  row("mean blocks in use", fmt::format("{:.1f}", s.mean_used_blocks()));
  row("slots holding a token / allocated", fmt::format("{:.2f}%", 100 * s.utilization()));
  row("sharing factor (logical / physical tokens)", fmt::format("{:.2f}", s.sharing_factor()));
  row("naive peak: prompt + max_tokens", format_bytes(static_cast<uint64_t>(s.peak_naive_request_bytes())));
  row("naive peak: max_model_len", format_bytes(static_cast<uint64_t>(s.peak_naive_max_len_bytes())));
  row("prompt tokens (computed / total)", fmt::format("{} / {}", s.num_computed_prompt_tokens, s.num_prompt_tokens));
  row("generated tokens", fmt::format("{} ({:.1f}/s)", s.num_generated_tokens, s.generated_tokens_per_second()));
  row("copy-on-write copies, preemptions", fmt::format("{}, {}", s.cow_copies, s.preemptions));
  row("engine steps", fmt::format("{} (chart: every {})", s.num_steps, s.timeline_stride));
  return "<table>\n" + rows + "</table>\n";
}

}  // namespace

std::string run_report_html(const RunStats& stats, const std::string& input_name) {
  std::string body = fmt::format("<p>Input {}, model {}, backend {}.</p>\n", html_escape(input_name),
                                 html_escape(stats.job.model), html_escape(stats.engine.backend));
  body += "<h2>KV blocks over the run</h2>\n" + timeline_chart(stats.engine);
  body +=
      "<p class=\"note\">Counted after every engine step. Naive reservation by max_model_len per sequence "
      "is in the table (it would be far above the chart).</p>\n";
  body += "<h2>Figures</h2>\n" + figures_table(stats.engine);
  return page("pagedgen run report", body);
}

std::string sweep_report_html(const std::vector<SweepReportRow>& rows, bool outputs_identical,
                              const std::string& input_name) {
  std::string body = fmt::format("<p>Input {}; outputs identical across block sizes: <b>{}</b>.</p>\n",
                                 html_escape(input_name), outputs_identical ? "yes" : "NO");
  std::vector<std::string> categories;
  BarSeries peak_kv{"peak KV MiB", "#1f77b4", {}, "{:.1f}"};
  BarSeries util{"utilization %", "#2ca02c", {}, "{:.1f}"};
  BarSeries tok_s{"generated tokens/s", "#ff7f0e", {}, "{:.1f}"};
  BarSeries wall{"wall s", "#7f7f7f", {}, "{:.1f}"};
  for (const SweepReportRow& r : rows) {
    const EngineStats& s = r.stats.engine;
    categories.push_back(fmt::format("block size {}", r.block_size));
    peak_kv.values.push_back(static_cast<double>(s.peak_kv_bytes) / (1024.0 * 1024.0));
    util.values.push_back(100 * s.utilization());
    tok_s.values.push_back(s.generated_tokens_per_second());
    wall.values.push_back(r.wall_seconds);
  }
  body += "<h2>Block sizes compared</h2>\n" + svg_bar_chart(categories, {peak_kv, util, tok_s, wall});
  body += "<p class=\"note\">Each quantity has its own scale: its largest value is the full bar height.</p>\n";
  for (const SweepReportRow& r : rows) {
    body += fmt::format("<h2>Block size {}: KV blocks over the run</h2>\n", r.block_size);
    body += timeline_chart(r.stats.engine);
    body += figures_table(r.stats.engine);
  }
  return page("pagedgen sweep report", body);
}

}  // namespace pagedgen
