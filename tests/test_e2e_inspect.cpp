// `pagedgen inspect` prints the GPU memory the weights take per --dtype, worked out by hand
// for the tiny Phi-3 reference file (tests/data/arch-reference/phi3).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "test_paths.h"

using namespace pagedgen;
using namespace pagedgen::test;

TEST_CASE("inspect: GPU weights per --dtype, as the CUDA backend lays them out") {
  const TempDir dir("pagedgen-inspect");
  const std::filesystem::path model = data_dir() / "arch-reference" / "phi3" / "model.gguf";
  const CliResult result = run_pagedgen("inspect -m " + sh_quote(model), dir / "stderr.txt", dir / "stdout.txt");
  REQUIRE(result.exit_code == 0);
  std::ifstream in(dir / "stdout.txt");
  std::stringstream text;
  text << in.rdbuf();
  // vocab 512, hidden 32, 4 heads of 8 (q_dim 32), 2 KV heads (kv_dim 16), ffn 64, 2 layers,
  // a separate output head, 8 rotated dims (4 frequencies). bfloat16, 128 per 256-byte line:
  // token_embd 16384 + output 16384; per layer q|k|v 1024+512+512 = 2048, wo 1024, gate|up
  // 4096, down 2048 (all whole lines): 9216; 32768 + 2 x 9216 = 51200 values = 102400 bytes.
  // float32, 64 per line: output_norm 32 + rope 4 -> 64; per layer the two norms 64: 192
  // floats = 768 bytes. 103168 in all; float32 matrices: 204800 + 768 = 205568.
  const std::string out = text.str();
  CHECK(out.find("GPU weights    as the CUDA backend lays them out") != std::string::npos);
  CHECK(out.find("    bfloat16          103168   100.8 KiB\n") != std::string::npos);
  CHECK(out.find("     float16          103168   100.8 KiB\n") != std::string::npos);
  CHECK(out.find("     float32          205568   200.8 KiB\n") != std::string::npos);
}
