#include "cli_runner.h"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdlib>

#include "test_paths.h"

namespace pagedgen::test {

CliResult run_pagedgen(const std::string& args, const std::filesystem::path& stderr_file,
                       const std::filesystem::path& stdout_file, bool allow_gpu) {
  const std::string command =
      fmt::format("{}'{}' {} >'{}' 2>'{}'", allow_gpu ? "" : "CUDA_VISIBLE_DEVICES= ", pagedgen_binary().string(),
                  args, stdout_file.string(), stderr_file.string());
  const int status = std::system(command.c_str());
  REQUIRE(status != -1);
  REQUIRE(WIFEXITED(status));
  return {WEXITSTATUS(status), read_file(stderr_file)};
}

}  // namespace pagedgen::test
