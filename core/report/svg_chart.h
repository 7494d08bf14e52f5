// Inline SVG charts for the HTML reports: a line chart (series of (x, y) points) and a
// grouped bar chart. Plain SVG text, no script and no external asset, so a report opens
// offline in any browser.
#pragma once

#include <string>
#include <vector>

namespace pagedgen {

struct LineSeries {
  std::string name;
  std::string color;  // CSS colour
  std::vector<double> x;
  std::vector<double> y;  // [x.size()]
  bool dashed = false;
};

// Axes from 0 (y) and the smallest x to rounded maxima; a legend under the plot.
std::string svg_line_chart(const std::vector<LineSeries>& series, const std::string& x_label,
                           const std::string& y_label);

struct BarSeries {
  std::string name;
  std::string color;
  std::vector<double> values;  // one per category
  std::string value_format;    // fmt format of the label over each bar, e.g. "{:.1f}"
};

// One group of bars per category, one bar per series; each series has its own scale
// (its largest value is the full height), so unlike quantities can sit side by side.
std::string svg_bar_chart(const std::vector<std::string>& categories, const std::vector<BarSeries>& series);

}  // namespace pagedgen
