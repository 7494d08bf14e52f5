// Error kinds shared by the whole project (STYLE.md habit 8):
//  - Error: a user or input problem (bad file, bad flag, bad line). The message says what
//    was wrong, where, and what to do; app/ turns it into an error record or exit code.
//  - SettingError: an Error caused by one run setting (a pool too small, a limit out of
//    range), which it names as core knows it ("max_num_seqs"); app/ prints the flag, then
//    the message, so a message reads on from it: "<value> holds no block of ...".
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

class SettingError : public Error {
 public:
  SettingError(std::string setting, const std::string& message) : Error(message), setting_(std::move(setting)) {}
  // snake_case, as in EngineConfig and the backends' options: "block_size", "kv_pool", ...
  const std::string& setting() const { return setting_; }

 private:
  std::string setting_;
};

// Throws Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

// Throws SettingError for `setting` with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail_setting(std::string setting, fmt::format_string<Args...> format, Args&&... args) {
  throw SettingError(std::move(setting), fmt::format(format, std::forward<Args>(args)...));
}

[[noreturn]] void check_failed(const char* expression, const char* file, int line, const std::string& detail);

}  // namespace pagedgen

#define PG_CHECK(cond, ...)                                                                        \
  do {                                                                                             \
    if (!(cond)) ::pagedgen::check_failed(#cond, __FILE__, __LINE__, fmt::format("" __VA_ARGS__)); \
  } while (0)
