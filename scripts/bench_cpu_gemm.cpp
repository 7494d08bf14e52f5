// Benchmark (not a test), on the SmolLM2-135M shapes, two tables and a JSON line each:
//   1. the exact path's batch-invariant cpu::gemm against OpenBLAS (cpu::matmul, the dense
//      reference's GEMM);
//   2. the fast path's quant_gemm on Q4_1 weights (Q8_0 for the lm head, as in the default
//      model's file), on every instruction set this CPU has, against cpu::gemm on the same
//      shape: GMAC/s and the packed weights' GB/s.
// Built and run by scripts/bench-cpu-gemm.sh. Calls alternate between the two compared so a
// shared machine's load hits both alike.
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

#include "backend/cpu_thread_pool.h"
#include "cpu/cpu_gemm.h"
#include "cpu/cpu_isa.h"
#include "cpu/cpu_ops.h"
#include "cpu/q8_activations.h"
#include "cpu/quant_gemm.h"
#include "model/packed_matrix.h"
#include "model/quant_blocks.h"

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

// Random blocks of `type` for a (rows, cols) tensor: random integers, float16 scales of
// about 0.01 (so no block is NaN or infinite).
std::vector<uint8_t> random_quant_tensor(pagedgen::GgmlType type, std::size_t rows, std::size_t cols,
                                         std::mt19937& rng) {
  const pagedgen::QuantFormat f = *pagedgen::quant_format(type);
  std::vector<uint8_t> data(rows * cols / f.block_elements * f.block_bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : data) b = static_cast<uint8_t>(byte(rng));
  for (std::size_t at = 0; at < data.size(); at += f.block_bytes) {
    data[at] = 0x1f;  // float16 0x201f, about 0.008: d (and m, for Q4_1)
    data[at + 1] = 0x20;
    if (f.has_min) data[at + 2] = 0x1f, data[at + 3] = 0x20;
  }
  return data;
}

void quant_table(const std::vector<Shape>& shapes, const std::vector<std::size_t>& row_counts,
                 pagedgen::cpu::CpuThreadPool& pool, double min_seconds) {
  using namespace pagedgen;
  std::mt19937 rng(99);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::printf(
      "\nquant_gemm (--cpu-math fast) per instruction set vs cpu::gemm (exact, float32 weights), %zu threads.\n",
      pool.num_threads());
  std::printf("GMAC/s = M*N*K / time and packed weight GB/s, fastest call; ratio = quant_gemm / cpu::gemm.\n");
  std::printf("%-9s %6s %6s %5s %-12s | %8s %8s %8s %6s\n", "op", "K", "N", "M", "isa", "GMAC/s", "GB/s", "exact",
              "ratio");
  std::string json = "{\"bench\":\"quant_gemm\",\"threads\":" + std::to_string(pool.num_threads()) + ",\"rows\":[";
  bool first = true;
  for (const Shape& shape : shapes) {
    const GgmlType type = shape.out_features > 10000 ? GgmlType::Q8_0 : GgmlType::Q4_1;
    const std::vector<uint8_t> data = random_quant_tensor(type, shape.out_features, shape.in_features, rng);
    const PackedMatrix packed(type, data.data(), shape.out_features, shape.in_features);
    std::vector<float> dense(shape.out_features * shape.in_features);
    for (float& v : dense) v = normal(rng) * 0.02f;
    for (std::size_t m : row_counts) {
      std::vector<float> x(m * shape.in_features);
      for (float& v : x) v = normal(rng);
      std::vector<cpu::Q8Block> xq(m * shape.in_features / 32);
      cpu::quantize_rows_q8(x.data(), m, shape.in_features, xq.data());
      std::vector<float> y(m * shape.out_features);
      const double macs = static_cast<double>(m * shape.out_features * shape.in_features);
      for (cpu::CpuIsa isa : cpu::supported_cpu_isas()) {
        if (isa == cpu::CpuIsa::kGeneric && m > 1) continue;  // the portable path only at decode: it is slow
        const auto [quant, exact] = time_alternating(
            [&] { cpu::quant_gemm(xq.data(), m, packed, y.data(), pool, isa); },
            [&] { cpu::gemm(x.data(), dense.data(), y.data(), m, shape.in_features, shape.out_features, pool); },
            min_seconds, 300);
        const double gmacs = macs / quant.best_seconds * 1e-9, exact_gmacs = macs / exact.best_seconds * 1e-9;
        const double gbs = static_cast<double>(packed.bytes()) / quant.best_seconds * 1e-9;
        std::printf("%-9s %6zu %6zu %5zu %-12s | %8.1f %8.1f %8.1f %6.2f\n", shape.what, shape.in_features,
                    shape.out_features, m, cpu::cpu_isa_name(isa).c_str(), gmacs, gbs, exact_gmacs,
                    gmacs / exact_gmacs);
        char row[320];
        std::snprintf(row, sizeof row,
                      "%s{\"K\":%zu,\"N\":%zu,\"M\":%zu,\"isa\":\"%s\",\"gmacs\":%.2f,\"gbs\":%.2f,"
                      "\"exact_gmacs\":%.2f}",
                      first ? "" : ",", shape.in_features, shape.out_features, m, cpu::cpu_isa_name(isa).c_str(), gmacs,
                      gbs, exact_gmacs);
        json += row;
        first = false;
      }
    }
  }
  json += "]}";
  std::printf("%s\n", json.c_str());
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
  quant_table(shapes, row_counts, pool, min_seconds);
  return 0;
}
