#include "report/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "util/html_escape.h"

namespace pagedgen {

namespace {

constexpr double kWidth = 880, kHeight = 360;
constexpr double kLeft = 80, kRight = 20, kTop = 16, kBottom = 48;

// The smallest 1, 2 or 5 times a power of ten at or above `value` (1 for 0).
double nice_ceiling(double value) {
  if (value <= 0) return 1;
  const double power = std::pow(10.0, std::floor(std::log10(value)));
  for (double step : {1.0, 2.0, 5.0, 10.0})
    if (step * power >= value) return step * power;
  return 10 * power;
}

std::string tick_label(double value) {
  if (std::abs(value) >= 1e6) return fmt::format("{:.3g}M", value / 1e6);
  if (std::abs(value) >= 1e4) return fmt::format("{:.3g}k", value / 1e3);
  return fmt::format("{:.4g}", value);
}

// Swatches and names in rows under the plot, starting at baseline y.
std::string legend(const std::vector<std::pair<std::string, std::string>>& entries, double y) {
  std::string out;
  double x = kLeft;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& [name, color] = entries[i];
    const double entry_width = 28 + 7.0 * static_cast<double>(name.size());
    if (x > kLeft && x + entry_width > kWidth - kRight) {  // next row
      x = kLeft;
      y += 18;
    }
    out += fmt::format(R"(<rect x="{:.0f}" y="{:.0f}" width="14" height="4" fill="{}"/>)", x, y - 4, color);
    out += fmt::format(R"(<text x="{:.0f}" y="{:.0f}" font-size="12">{}</text>)", x + 18, y, html_escape(name));
    x += entry_width;
  }
  return out;
}

}  // namespace

std::string svg_line_chart(const std::vector<LineSeries>& series, const std::string& x_label,
                           const std::string& y_label) {
  double x_min = 0, x_max = 1, y_max = 0;
  bool first = true;
  for (const LineSeries& s : series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      x_min = first ? s.x[i] : std::min(x_min, s.x[i]);
      x_max = first ? s.x[i] : std::max(x_max, s.x[i]);
      y_max = std::max(y_max, s.y[i]);
      first = false;
    }
  }
  if (x_max <= x_min) x_max = x_min + 1;
  y_max = nice_ceiling(y_max);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const auto px = [&](double x) { return kLeft + (x - x_min) / (x_max - x_min) * plot_w; };
  const auto py = [&](double y) { return kTop + plot_h - y / y_max * plot_h; };

  std::string out = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {:.0f} {:.0f}" width="{:.0f}" height="{:.0f}" font-family="sans-serif">)",
      kWidth, kHeight + 44, kWidth, kHeight + 44);
  for (int i = 0; i <= 5; ++i) {
    const double y = y_max * i / 5, x = x_min + (x_max - x_min) * i / 5;
    out += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#ddd"/>)", kLeft, py(y),
                       kLeft + plot_w, py(y));
    out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="11" text-anchor="end">{}</text>)", kLeft - 6,
                       py(y) + 4, tick_label(y));
    out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="11" text-anchor="middle">{}</text>)", px(x),
                       kTop + plot_h + 16, tick_label(std::round(x)));
  }
  out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="12" text-anchor="middle">{}</text>)", kLeft + plot_w / 2,
                     kTop + plot_h + 34, html_escape(x_label));
  out += fmt::format(
      R"svg(<text x="14" y="{:.1f}" font-size="12" text-anchor="middle" transform="rotate(-90 14 {:.1f})">{}</text>)svg",
      kTop + plot_h / 2, kTop + plot_h / 2, html_escape(y_label));
  std::vector<std::pair<std::string, std::string>> entries;
  for (const LineSeries& s : series) {
    std::string points;
    for (std::size_t i = 0; i < s.x.size(); ++i) points += fmt::format("{:.1f},{:.1f} ", px(s.x[i]), py(s.y[i]));
    out += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="1.6"{} points="{}"/>)", s.color,
                       s.dashed ? R"( stroke-dasharray="6 4")" : "", points);
    entries.emplace_back(s.name, s.color);
  }
  out += legend(entries, kHeight + 8);
  out += "</svg>";
  return out;
}

std::string svg_bar_chart(const std::vector<std::string>& categories, const std::vector<BarSeries>& series) {
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const double group_w = plot_w / static_cast<double>(std::max<std::size_t>(1, categories.size()));
  const double bar_w = group_w * 0.8 / static_cast<double>(std::max<std::size_t>(1, series.size()));
  std::string out = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {:.0f} {:.0f}" width="{:.0f}" height="{:.0f}" font-family="sans-serif">)",
      kWidth, kHeight + 44, kWidth, kHeight + 44);
  out += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#999"/>)", kLeft, kTop + plot_h,
                     kLeft + plot_w, kTop + plot_h);
  std::vector<std::pair<std::string, std::string>> entries;
  for (std::size_t s = 0; s < series.size(); ++s) {
    const BarSeries& b = series[s];
    const double top = std::max(1e-300, *std::ranges::max_element(b.values));
    for (std::size_t c = 0; c < categories.size() && c < b.values.size(); ++c) {
      const double h = b.values[c] / top * (plot_h - 16);
      const double x = kLeft + group_w * static_cast<double>(c) + group_w * 0.1 + bar_w * static_cast<double>(s);
      out += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"/>)", x,
                         kTop + plot_h - h, bar_w - 2, h, b.color);
      out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="10" text-anchor="middle">{}</text>)",
                         x + bar_w / 2 - 1, kTop + plot_h - h - 3,
                         html_escape(fmt::vformat(b.value_format, fmt::make_format_args(b.values[c]))));
    }
    entries.emplace_back(b.name, b.color);
  }
  for (std::size_t c = 0; c < categories.size(); ++c)
    out +=
        fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="12" text-anchor="middle">{}</text>)",
                    kLeft + group_w * (static_cast<double>(c) + 0.5), kTop + plot_h + 16, html_escape(categories[c]));
  out += legend(entries, kHeight + 8);
  out += "</svg>";
  return out;
}

}  // namespace pagedgen
