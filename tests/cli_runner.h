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
// (discarded by default). The CLI contract tests pin the CPU backend's bits, so GPUs are
// hidden from the child (CUDA_VISIBLE_DEVICES empty: --device auto picks the CPU) unless
// `allow_gpu`.
CliResult run_pagedgen(const std::string& args, const std::filesystem::path& stderr_file,
                       const std::filesystem::path& stdout_file = "/dev/null", bool allow_gpu = false);

}  // namespace pagedgen::test
