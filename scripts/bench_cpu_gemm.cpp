// Benchmark (not a test): the batch-invariant cpu::gemm against OpenBLAS (cpu::matmul, the
// dense reference's GEMM) on the SmolLM2-135M shapes. Prints a table and one JSON line.
// Built and run by scripts/bench-cpu-gemm.sh. Calls alternate between the two so a shared
// machine's load hits both alike.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <utility>
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

struct Timing {
  double best_seconds;    // fastest call: the kernel's speed when it had the cores to itself
  double median_seconds;  // typical call on this (possibly shared) machine
};

// Times a and b call by call, alternating so that both see the same machine load, until
// each has run max_calls times or min_seconds in total.
std::pair<Timing, Timing> time_alternating(const std::function<void()>& a, const std::function<void()>& b,
                                           double min_seconds, std::size_t max_calls) {
  using Clock = std::chrono::steady_clock;
  a();  // warm-up: caches, page faults, thread start
  b();
  std::vector<double> ta, tb;
  double total = 0;
  while (ta.size() < max_calls && total < 2 * min_seconds) {
    for (auto [fn, times] : {std::pair{&a, &ta}, std::pair{&b, &tb}}) {
      const auto start = Clock::now();
      (*fn)();
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      times->push_back(seconds);
      total += seconds;
    }
  }
  auto summarize = [](std::vector<double>& t) {
    std::sort(t.begin(), t.end());
    return Timing{t.front(), t[t.size() / 2]};
  };
  return {summarize(ta), summarize(tb)};
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t num_threads = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 2;
  const double min_seconds = argc > 2 ? std::strtod(argv[2], nullptr) : 0.3;
  openblas_set_num_threads(static_cast<int>(num_threads));
  pagedgen::cpu::CpuThreadPool pool(num_threads);

  const std::vector<Shape> shapes = {
      {576, 576, "q/o proj"}, {576, 192, "k/v proj"},  {576, 1536, "gate/up"},
      {1536, 576, "down"},    {576, 49152, "lm head"},
  };
  const std::vector<std::size_t> row_counts = {1, 32, 128, 512};

  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::printf("cpu::gemm vs OpenBLAS (cpu::matmul: sgemv at M=1, sgemm above), %zu threads.\n", num_threads);
  std::printf("GFLOP/s = 2*M*N*K / time, for the fastest call (best) and the median call.\n");
  std::printf("%-9s %6s %6s %5s | %8s %8s %6s | %8s %8s %6s\n", "op", "K", "N", "M", "gemm", "openblas", "ratio",
              "gemm", "openblas", "ratio");
  std::printf("%-9s %6s %6s %5s | %24s | %24s\n", "", "", "", "", "best", "median");
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
      const auto [ours, blas] = time_alternating(
          [&] { pagedgen::cpu::gemm(x.data(), w.data(), y.data(), m, shape.in_features, shape.out_features, pool); },
          [&] { pagedgen::cpu::matmul(x.data(), w.data(), y.data(), m, shape.in_features, shape.out_features); },
          min_seconds, 300);
      const double best_ours = flops / ours.best_seconds * 1e-9, best_blas = flops / blas.best_seconds * 1e-9;
      const double med_ours = flops / ours.median_seconds * 1e-9, med_blas = flops / blas.median_seconds * 1e-9;
      std::printf("%-9s %6zu %6zu %5zu | %8.1f %8.1f %6.2f | %8.1f %8.1f %6.2f\n", shape.what, shape.in_features,
                  shape.out_features, m, best_ours, best_blas, best_ours / best_blas, med_ours, med_blas,
                  med_ours / med_blas);
      char row[320];
      std::snprintf(row, sizeof row,
                    "%s{\"K\":%zu,\"N\":%zu,\"M\":%zu,\"gemm_best\":%.2f,\"openblas_best\":%.2f,"
                    "\"gemm_median\":%.2f,\"openblas_median\":%.2f}",
                    first ? "" : ",", shape.in_features, shape.out_features, m, best_ours, best_blas, med_ours,
                    med_blas);
      json += row;
      first = false;
    }
  }
  json += "]}";
  std::printf("%s\n", json.c_str());
  return 0;
}
