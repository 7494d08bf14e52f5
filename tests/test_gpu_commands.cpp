// `plan --device cuda` and `sweep --device cuda` on a real GPU: plan sizes the pool with the
// CUDA backend (dummy weights of the model's shape, bfloat16 KV) and sweep runs every block
// size on the device, with identical text in float32 and a list of differing lines (never a
// failure) in bfloat16. On the default model, or without it on a stand-in of its shape
// (gpu_test_model.h). Skipped without a GPU.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "gpu_test_device.h"
#include "gpu_test_model.h"
#include "test_paths.h"

using namespace pagedgen;

namespace {

std::filesystem::path work_dir() {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "pagedgen-gpu-commands";
  std::filesystem::create_directories(dir);
  return dir;
}

test::CliResult run_on_gpu(const std::string& args, const std::filesystem::path& stdout_file) {
  return test::run_pagedgen(args, work_dir() / "stderr.txt", stdout_file, true);
}

}  // namespace

TEST_CASE("plan --device cuda: bfloat16 KV bytes and a pool sized from free device memory") {
  REQUIRE_GPU();
  const std::filesystem::path input = test::source_dir() / "samples" / "chat.jsonl";
  const auto plan = [&](const std::string& name, const std::string& flags) {
    const std::filesystem::path json = work_dir() / fmt::format("plan-{}.json", name);
    const test::CliResult r = run_on_gpu(
        fmt::format("plan {} -i '{}' --block-sizes 16 {} --json '{}'", test::gpu_test_model_files_args(),
                    input.string(), flags, json.string()),
        "/dev/null");
    INFO(r.stderr_text);
    REQUIRE(r.exit_code == 0);
    return test::read_file(json);
  };
  const std::string gpu = plan("cuda", "--device cuda");
  const std::string cpu = plan("cpu", "--device cpu");  // the fast path: a float16 KV cache
  const std::string exact = plan("cpu-exact", "--device cpu --cpu-math exact");
  CHECK(gpu.find("\"kv_dtype\": \"bfloat16\"") != std::string::npos);
  CHECK(cpu.find("\"kv_dtype\": \"float16\"") != std::string::npos);
  CHECK(exact.find("\"kv_dtype\": \"float32\"") != std::string::npos);
  // SmolLM2-135M: 30 layers x 3 KV heads x 64 dims x (K and V): 11520 elements per token.
  CHECK(gpu.find("\"kv_bytes_per_token\": 23040") != std::string::npos);
  CHECK(cpu.find("\"kv_bytes_per_token\": 23040") != std::string::npos);
  CHECK(exact.find("\"kv_bytes_per_token\": 46080") != std::string::npos);
}

TEST_CASE("sweep --device cuda: float32 text identical across block sizes; bfloat16 reports, never fails") {
  REQUIRE_GPU();
  const std::filesystem::path input = test::source_dir() / "samples" / "chat.jsonl";
  const std::filesystem::path table = work_dir() / "table.txt";
  const test::CliResult exact = run_on_gpu(
      fmt::format("sweep -q {} -i '{}' --device cuda --dtype float32 --block-sizes 8,16,64 --max-tokens 16",
                  test::gpu_test_model_args(), input.string()), table);
  INFO(exact.stderr_text);
  CHECK(exact.exit_code == 0);
  CHECK(test::read_file(table).find("outputs identical across block sizes: yes") != std::string::npos);
  const test::CliResult bf16 = run_on_gpu(
      fmt::format("sweep -q {} -i '{}' --device cuda --block-sizes 8,16,64 --max-tokens 16",
                  test::gpu_test_model_args(), input.string()), table);
  INFO(bf16.stderr_text);
  CHECK(bf16.exit_code == 0);
  CHECK(test::read_file(table).find("outputs identical across block sizes:") != std::string::npos);
}
