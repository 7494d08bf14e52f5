// Runs the built pagedgen binary from a test: arguments as one shell string, stderr
// captured, the exit code returned. For the CLI contract tests (test_e2e_*).
#pragma once

#include <filesystem>
#include <string>

namespace pagedgen::test {

struct CliResult {
  int exit_code;
  std::string stderr_text;
};

// Runs `pagedgen <args>` with stderr written to `stderr_file` and stdout to `stdout_file`
// (discarded by default).
CliResult run_pagedgen(const std::string& args, const std::filesystem::path& stderr_file,
                       const std::filesystem::path& stdout_file = "/dev/null");

}  // namespace pagedgen::test
