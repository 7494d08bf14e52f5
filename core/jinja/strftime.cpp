// The date directives of C's strftime in the C locale (what Python's datetime.strftime
// calls), at midnight: %H %M %S are 00, %p is AM, %Z and %z are empty (a naive datetime).
#include "jinja/strftime.h"

#include <fmt/format.h>

#include <optional>

namespace pagedgen::jinja {

namespace {

constexpr std::string_view kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                                        "July",    "August",   "September", "October", "November", "December"};
constexpr std::string_view kWeekdays[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};

// The directives that do not depend on the date: the time of day is midnight, the zone
// empty (a naive datetime).
std::optional<std::string> fixed_directive(char letter) {
  switch (letter) {
    case 'H':
    case 'M':
    case 'S':
      return std::string("00");
    case 'I':
      return std::string("12");
    case 'p':
      return std::string("AM");
    case 'Z':
    case 'z':
      return std::string();
    case 'T':
    case 'X':
      return std::string("00:00:00");
    case 'R':
      return std::string("00:00");
    case 'n':
      return std::string("\n");
    case 't':
      return std::string("\t");
    case '%':
      return std::string("%");
    default:
      return std::nullopt;
  }
}

// One directive's text; nullopt for a letter strftime does not know (written as is).
std::optional<std::string> directive(char letter, std::chrono::year_month_day date) {
  using namespace std::chrono;
  const int year = static_cast<int>(date.year());
  const unsigned month = static_cast<unsigned>(date.month());
  const unsigned day = static_cast<unsigned>(date.day());
  const unsigned weekday = std::chrono::weekday(sys_days(date)).c_encoding();  // 0: Sunday
  const int day_of_year = (sys_days(date) - sys_days(year_month_day(date.year(), January, 1d))).count() + 1;
  switch (letter) {
    case 'Y':
      return fmt::format("{}", year);
    case 'y':
      return fmt::format("{:02}", ((year % 100) + 100) % 100);
    case 'C':
      return fmt::format("{:02}", year / 100);
    case 'm':
      return fmt::format("{:02}", month);
    case 'd':
      return fmt::format("{:02}", day);
    case 'e':
      return fmt::format("{:>2}", day);
    case 'j':
      return fmt::format("{:03}", day_of_year);
    case 'b':
    case 'h':
      return std::string(kMonths[month - 1].substr(0, 3));
    case 'B':
      return std::string(kMonths[month - 1]);
    case 'a':
      return std::string(kWeekdays[weekday].substr(0, 3));
    case 'A':
      return std::string(kWeekdays[weekday]);
    case 'w':
      return fmt::format("{}", weekday);
    case 'u':
      return fmt::format("{}", weekday == 0 ? 7 : weekday);
    case 'F':
      return fmt::format("{}-{:02}-{:02}", year, month, day);
    case 'D':
    case 'x':
      return fmt::format("{:02}/{:02}/{:02}", month, day, ((year % 100) + 100) % 100);
    case 'c':
      return fmt::format("{} {} {:>2} 00:00:00 {}", kWeekdays[weekday].substr(0, 3), kMonths[month - 1].substr(0, 3),
                         day, year);
    default:
      return fixed_directive(letter);
  }
}

}  // namespace

std::string format_date(std::string_view format, std::chrono::year_month_day date) {
  std::string out;
  for (std::size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%' || i + 1 == format.size()) {
      out += format[i];
      continue;
    }
    if (std::optional<std::string> text = directive(format[i + 1], date)) {
      out += *text;
    } else {
      out += format.substr(i, 2);
    }
    ++i;
  }
  return out;
}

}  // namespace pagedgen::jinja
