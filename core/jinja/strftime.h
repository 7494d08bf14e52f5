// strftime for transformers' strftime_now: a date at 00:00:00, with C-locale names.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace pagedgen::jinja {

std::string format_date(std::string_view format, std::chrono::year_month_day date);

}  // namespace pagedgen::jinja
