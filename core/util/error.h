// Error kinds shared by the whole project (STYLE.md habit 8):
//  - Error: a user or input problem (bad file, bad flag, bad line). The message says what
//    was wrong, where, and what to do; app/ turns it into an error record or exit code.
//  - PG_CHECK: an invariant of our own code. Stays on in release builds.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace pagedgen {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

[[noreturn]] void check_failed(const char* expression, const char* file, int line,
                               const std::string& detail);

}  // namespace pagedgen

#define PG_CHECK(cond, ...)                                                              \
  do {                                                                                   \
    if (!(cond)) ::pagedgen::check_failed(#cond, __FILE__, __LINE__, fmt::format("" __VA_ARGS__)); \
  } while (0)
