// The --report pages: one self-contained HTML file (inline CSS and SVG, no script, no
// external asset) that shows how a run used its KV memory.
//   run_report_html:   KV blocks over the run (allocated, holding tokens, shared, and what
//                      naive reservation would have needed) and the run's key figures.
//   sweep_report_html: the same for each block size, plus bars comparing the sizes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "job/run_stats.h"

namespace pagedgen {

std::string run_report_html(const RunStats& stats, const std::string& input_name);

struct SweepReportRow {
  int32_t block_size = 0;
  RunStats stats;
  double wall_seconds = 0;
};

std::string sweep_report_html(const std::vector<SweepReportRow>& rows, bool outputs_identical,
                              const std::string& input_name);

}  // namespace pagedgen
