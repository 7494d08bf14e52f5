// cpu::gemm: every row is bitwise the same whatever the batch around it and the thread
// count, equals the scalar reference of the fixed operation order, and is close to a
// double-precision product.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu_thread_pool.h"
#include "cpu/cpu_gemm.h"
#include "cpu/fixed_order_dot.h"
#include "logits_compare.h"

using namespace pagedgen;

namespace {

std::vector<float> random_values(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

using test::same_bits;

}  // namespace

TEST_CASE("dot_fixed_order matches its scalar reference bit for bit, tails included") {
  for (std::size_t n : {1u, 7u, 8u, 9u, 15u, 16u, 64u, 65u, 576u, 1539u}) {
    const auto a = random_values(n, 1);
    const auto b = random_values(n, 2);
    const float vec = cpu::dot_fixed_order(a.data(), b.data(), n);
    const float ref = cpu::dot_fixed_order_scalar(a.data(), b.data(), n);
    CAPTURE(n);
    CHECK(std::memcmp(&vec, &ref, sizeof(float)) == 0);
  }
}

TEST_CASE("the fixed reduction tree pairs lanes (i, i+4), then (0,2) and (1,3)") {
  // Values chosen so that any other pairing rounds differently: 1e8 + 1 loses the 1.
  cpu::Lanes8 acc;
  const float lanes[8] = {1e8f, 1.0f, 1.0f, 1.0f, -1e8f, 1.0f, 1.0f, 1.0f};
  std::memcpy(acc.lane, lanes, sizeof lanes);
  // (1e8 + -1e8) = 0, (1+1), (1+1), (1+1) -> (0 + 2) + (2 + 2) = 6
  CHECK(cpu::reduce_lanes8(acc) == 6.0f);
}

TEST_CASE("gemm rows are bitwise independent of the row count, the row's place and the threads") {
  cpu::CpuThreadPool pool1(1);
  cpu::CpuThreadPool pool2(2);
  struct Shape {
    std::size_t k, n;
  };
  // SmolLM2 shapes plus odd ones that exercise every edge tile, the scalar K tail and K
  // slices (1536 = 3 x 512; 1003 = 512 + 491, ending in a tail of 3), in the 4-row tiles
  // and in AVX-512's 6 x 8 tiles (column counts that are multiples of 8).
  for (const Shape shape :
       {Shape{576, 192}, Shape{1536, 576}, Shape{37, 29}, Shape{64, 100}, Shape{1003, 29}, Shape{1003, 48}}) {
    CAPTURE(shape.k);
    CAPTURE(shape.n);
    const std::size_t max_rows = 37;
    const auto x = random_values(max_rows * shape.k, 3);
    const auto w = random_values(shape.n * shape.k, 4);

    // Each row alone (M = 1) is the reference.
    std::vector<float> alone(max_rows * shape.n);
    for (std::size_t r = 0; r < max_rows; ++r)
      cpu::gemm(x.data() + r * shape.k, w.data(), alone.data() + r * shape.n, 1, shape.k, shape.n, pool1);

    // The scalar emulation of the operation order gives the same bits.
    std::vector<float> scalar(max_rows * shape.n);
    cpu::gemm_reference_order(x.data(), w.data(), scalar.data(), max_rows, shape.k, shape.n);
    CHECK(same_bits(alone, scalar));

    for (std::size_t m : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 13u, 32u, 37u}) {
      for (cpu::CpuThreadPool* pool : {&pool1, &pool2}) {
        // Rows [first, first + m) of x, so a row sits at a different place in each batch.
        for (std::size_t first : {std::size_t{0}, max_rows - m}) {
          std::vector<float> y(m * shape.n);
          cpu::gemm(x.data() + first * shape.k, w.data(), y.data(), m, shape.k, shape.n, *pool);
          CAPTURE(m);
          CAPTURE(first);
          CHECK(same_bits(y, std::span(alone).subspan(first * shape.n, y.size())));
        }
      }
    }
  }
}

TEST_CASE("gemm is within float rounding of a double-precision product") {
  cpu::CpuThreadPool pool(2);
  const std::size_t m = 9, k = 1536, n = 70;
  const auto x = random_values(m * k, 5);
  const auto w = random_values(n * k, 6);
  std::vector<float> y(m * n);
  cpu::gemm(x.data(), w.data(), y.data(), m, k, n, pool);
  double max_err = 0.0;
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t c = 0; c < n; ++c) {
      double ref = 0.0, abs_sum = 0.0;
      for (std::size_t i = 0; i < k; ++i) {
        ref += static_cast<double>(x[r * k + i]) * w[c * k + i];
        abs_sum += std::abs(static_cast<double>(x[r * k + i]) * w[c * k + i]);
      }
      // Error bound of a float sum of k terms, relative to the sum of magnitudes.
      const double err = std::abs(y[r * n + c] - ref) / abs_sum;
      max_err = std::max(max_err, err);
    }
  MESSAGE("max relative error (to the sum of |terms|): " << max_err);
  CHECK(max_err < 1e-5);  // k/8 + 3 roundings of 6e-8 each would be ~1.2e-5 in the worst case
}

TEST_CASE("gemm handles zero rows and a single column") {
  cpu::CpuThreadPool pool(2);
  const auto x = random_values(3 * 16, 7);
  const auto w = random_values(16, 8);
  std::vector<float> y(3, -1.0f);
  cpu::gemm(x.data(), w.data(), y.data(), 0, 16, 1, pool);
  CHECK(y[0] == -1.0f);  // nothing written
  cpu::gemm(x.data(), w.data(), y.data(), 3, 16, 1, pool);
  for (std::size_t r = 0; r < 3; ++r) CHECK(y[r] == cpu::dot_fixed_order_scalar(x.data() + r * 16, w.data(), 16));
}

TEST_CASE("gemm on float16 and bfloat16 weights is the same bits as on their float32 values") {
  cpu::CpuThreadPool pool(2);
  for (const std::size_t k : {576u, 1003u}) {  // one K slice, and slices with a tail of 3
    CAPTURE(k);
    for (const std::size_t n : {45u, 48u}) {  // 4-row tiles only, and AVX-512's wide tiles too
      const std::size_t rows = 7;
      const auto x = random_values(rows * k, 5);
      const auto w = random_values(n * k, 6);
      std::vector<Float16> w16(w.size());
      std::vector<BFloat16> wb16(w.size());
      std::vector<float> w16_values(w.size()), wb16_values(w.size());
      for (std::size_t i = 0; i < w.size(); ++i) {
        w16[i] = from_float<Float16>(w[i]);
        wb16[i] = from_float<BFloat16>(w[i]);
        w16_values[i] = to_float(w16[i]);
        wb16_values[i] = to_float(wb16[i]);
      }
      std::vector<float> expected(rows * n), y(rows * n);
      cpu::gemm(x.data(), w16_values.data(), expected.data(), rows, k, n, pool);
      cpu::gemm(x.data(), w16.data(), y.data(), rows, k, n, pool);
      CHECK(same_bits(y, expected));
      cpu::gemm(x.data(), wb16_values.data(), expected.data(), rows, k, n, pool);
      cpu::gemm(x.data(), wb16.data(), y.data(), rows, k, n, pool);
      CHECK(same_bits(y, expected));
      CHECK(w16_values != wb16_values);  // the two roundings differ: the check above is not vacuous
    }
  }
}
