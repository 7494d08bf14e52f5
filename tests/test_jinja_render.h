// Rendering for the jinja tests: a template parsed and rendered at once, on a fixed date
// (2026-12-06, what strftime_now formats). The expected strings of the tests were checked
// against Python's jinja2 3.1 configured as transformers configures it.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "jinja/template.h"

namespace pagedgen::test {

inline constexpr std::chrono::year_month_day kRenderDate{std::chrono::year{2026}, std::chrono::December,
                                                         std::chrono::day{6}};

inline std::string render(std::string_view source, std::string_view variables = "{}",
                          const jinja::RenderLimits& limits = {}) {
  return jinja::Template::parse(source).render(variables, kRenderDate, limits);
}

}  // namespace pagedgen::test
