// Benchmark (not a test): the batch-invariant cpu::gemm against OpenBLAS (cpu::matmul, the
// dense reference's GEMM) on the SmolLM2-135M shapes. Prints a table and one JSON line.
// Built and run by scripts/bench-cpu-gemm.sh.
#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu_gemm.h"
#include "backend/cpu_ops.h"
#include "backend/cpu_thread_pool.h"

extern "C" void openblas_set_num_threads(int num_threads);

namespace {

struct Shape {
  std::size_t in_features;
  std::size_t out_features;
  const char* what;
};

// Runs fn until at least min_seconds have passed; returns seconds per call.
template <typename Fn>
double time_per_call(Fn&& fn, double min_seconds) {
  fn();  // warm-up: caches, page faults
  using Clock = std::chrono::steady_clock;
  std::size_t calls = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  do {
    fn();
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < min_seconds);
  return elapsed / static_cast<double>(calls);
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t num_threads = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 2;
  const double min_seconds = argc > 2 ? std::strtod(argv[2], nullptr) : 0.3;
  openblas_set_num_threads(static_cast<int>(num_threads));
  pagedgen::cpu::CpuThreadPool pool(num_threads);

  const std::vector<Shape> shapes = {
      {576, 576, "q/o proj"}, {576, 192, "k/v proj"}, {576, 1536, "gate/up"},
      {1536, 576, "down"},    {576, 49152, "lm head"},
  };
  const std::vector<std::size_t> row_counts = {1, 32, 128, 512};

  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::printf("cpu::gemm vs OpenBLAS, %zu threads, GFLOP/s (2*M*N*K / time)\n", num_threads);
  std::printf("%-9s %6s %6s %5s %10s %10s %7s\n", "op", "K", "N", "M", "gemm", "openblas", "ratio");
  std::string json = "{\"bench\":\"cpu_gemm\",\"threads\":" + std::to_string(num_threads) + ",\"rows\":[";
  bool first = true;
  for (const Shape& shape : shapes) {
    std::vector<float> w(shape.out_features * shape.in_features);
    for (float& v : w) v = dist(rng);
    for (std::size_t m : row_counts) {
      std::vector<float> x(m * shape.in_features);
      for (float& v : x) v = dist(rng);
      std::vector<float> y(m * shape.out_features);
      const double flops = 2.0 * static_cast<double>(m * shape.out_features * shape.in_features);
      const double ours = time_per_call(
          [&] { pagedgen::cpu::gemm(x.data(), w.data(), y.data(), m, shape.in_features, shape.out_features, pool); },
          min_seconds);
      const double blas = time_per_call(
          [&] { pagedgen::cpu::matmul(x.data(), w.data(), y.data(), m, shape.in_features, shape.out_features); },
          min_seconds);
      const double ours_gflops = flops / ours * 1e-9;
      const double blas_gflops = flops / blas * 1e-9;
      std::printf("%-9s %6zu %6zu %5zu %10.1f %10.1f %7.2f\n", shape.what, shape.in_features, shape.out_features, m,
                  ours_gflops, blas_gflops, ours_gflops / blas_gflops);
      char row[256];
      std::snprintf(row, sizeof row, "%s{\"K\":%zu,\"N\":%zu,\"M\":%zu,\"gemm_gflops\":%.2f,\"openblas_gflops\":%.2f}",
                    first ? "" : ",", shape.in_features, shape.out_features, m, ours_gflops, blas_gflops);
      json += row;
      first = false;
    }
  }
  json += "]}";
  std::printf("%s\n", json.c_str());
  return 0;
}
