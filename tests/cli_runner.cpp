#include "cli_runner.h"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <regex>
#include <thread>

#include "test_paths.h"

namespace pagedgen::test {

CliResult run_pagedgen(const std::string& args, const std::filesystem::path& stderr_file,
                       const std::filesystem::path& stdout_file, bool allow_gpu) {
  const std::string command =
      fmt::format("{}'{}' {} >'{}' 2>'{}'", allow_gpu ? "" : "CUDA_VISIBLE_DEVICES= ", pagedgen_binary().string(), args,
                  stdout_file.string(), stderr_file.string());
  const int status = std::system(command.c_str());
  REQUIRE(status != -1);
  REQUIRE(WIFEXITED(status));
  return {WEXITSTATUS(status), read_file(stderr_file)};
}

bool says(const CliResult& r, const std::string& text) { return r.stderr_text.find(text) != std::string::npos; }

GenerateRun run_generate(const std::filesystem::path& dir, const std::filesystem::path& input, const std::string& name,
                         const std::string& flags) {
  const auto out = dir / (name + ".jsonl");
  const auto stats = dir / (name + ".stats.json");
  const CliResult r = run_pagedgen(fmt::format("generate -q -i '{}' -o '{}' --stats '{}' --max-tokens 12 --seed 5 {}",
                                               input.string(), out.string(), stats.string(), flags),
                                   dir / "stderr.txt");
  INFO(name << ": " << r.stderr_text);
  REQUIRE(r.exit_code == 0);
  return {read_file(out), stats};
}

std::string stats_without_timings(const std::string& stats) {
  static const std::regex time_object(R"re(\n\s*"(time_seconds|throughput)": \{[^}]*\},?)re");
  return std::regex_replace(stats, time_object, "\n");
}

int run_shell(const std::string& command) {
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

std::filesystem::path scratch_dir(const char* name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("pagedgen-{}-{}", name, ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string sh_quote(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

void wait_until(const std::function<bool()>& done, double timeout_seconds, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) FAIL("timed out waiting for " << what);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string without_cached_tokens(const std::string& text) {
  static const std::regex cached(R"("cached_tokens":\d+)");
  return std::regex_replace(text, cached, "\"cached_tokens\":_");
}

std::vector<std::string> complete_lines(const std::string& text) {
  std::vector<std::string> lines;
  for (std::size_t begin = 0, end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1)
    lines.push_back(text.substr(begin, end - begin));
  return lines;
}

int64_t json_int(const std::string& json, const char* object, const char* key) {
  simdjson::dom::parser parser;
  return int64_t(parser.parse(json)[object][key]);
}

int64_t json_file_int(const std::filesystem::path& file, const char* object, const char* key) {
  return json_int(read_file(file), object, key);
}

}  // namespace pagedgen::test
