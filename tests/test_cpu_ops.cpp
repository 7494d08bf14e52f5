// CPU building blocks on cases worked out by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "cpu/cpu_ops.h"
#include "model/model_config.h"
#include "model/model_weights.h"

using namespace pagedgen;

TEST_CASE("rms_norm scales each row by its root mean square and the weight") {
  // Row (3, 4): mean square 12.5, rms 3.5355...; weight (1, 2).
  const std::vector<float> x = {3, 4, 0, 0};
  const std::vector<float> w = {1, 2};
  std::vector<float> out(4);
  cpu::rms_norm(x.data(), w.data(), out.data(), 2, 2, 0.0f);
  CHECK(out[0] == doctest::Approx(3 / std::sqrt(12.5)));
  CHECK(out[1] == doctest::Approx(2 * 4 / std::sqrt(12.5)));
  // An all-zero row stays zero thanks to eps (no NaN).
  cpu::rms_norm(x.data(), w.data(), out.data(), 2, 2, 1e-5f);
  CHECK(out[2] == 0.0f);
  CHECK(out[3] == 0.0f);
}

TEST_CASE("matmul computes x @ w^T for one row and for many rows") {
  // w is (out=3, in=2); x rows (1, 2) and (3, -1).
  const std::vector<float> w = {1, 0, 0, 1, 2, 3};
  const std::vector<float> x = {1, 2, 3, -1};
  std::vector<float> y(6);
  cpu::matmul(x.data(), w.data(), y.data(), 2, 2, 3);
  CHECK(y == std::vector<float>{1, 2, 8, 3, -1, 3});
  std::vector<float> y1(3);
  cpu::matmul(x.data(), w.data(), y1.data(), 1, 2, 3);
  CHECK(y1 == std::vector<float>{1, 2, 8});
}

TEST_CASE("rope rotates the pairs each layout names") {
  // One head of 4 dims, position 1, inv_freq {pi/2, 0}: the first pair turns by 90
  // degrees, the second not at all.
  const std::vector<float> inv_freq = {static_cast<float>(M_PI / 2), 0.0f};
  const std::vector<int32_t> pos = {1};

  std::vector<float> interleaved = {1, 2, 3, 4};  // pairs (0,1) and (2,3)
  cpu::rope(interleaved.data(), pos, 1, 4, 4, RopeLayout::Interleaved, inv_freq);
  CHECK(interleaved[0] == doctest::Approx(-2).epsilon(1e-6));
  CHECK(interleaved[1] == doctest::Approx(1).epsilon(1e-6));
  CHECK(interleaved[2] == doctest::Approx(3));
  CHECK(interleaved[3] == doctest::Approx(4));

  std::vector<float> half = {1, 2, 3, 4};  // pairs (0,2) and (1,3)
  cpu::rope(half.data(), pos, 1, 4, 4, RopeLayout::HalfSplit, inv_freq);
  CHECK(half[0] == doctest::Approx(-3).epsilon(1e-6));
  CHECK(half[2] == doctest::Approx(1).epsilon(1e-6));
  CHECK(half[1] == doctest::Approx(2));
  CHECK(half[3] == doctest::Approx(4));

  // Position 0 leaves everything as it was.
  std::vector<float> still = {1, 2, 3, 4};
  const std::vector<int32_t> pos0 = {0};
  cpu::rope(still.data(), pos0, 1, 4, 4, RopeLayout::Interleaved, inv_freq);
  CHECK(still == std::vector<float>{1, 2, 3, 4});
}

TEST_CASE("rope inverse frequencies follow theta^(-2i/d), with Llama 3.1 scaling") {
  ModelConfig c;
  c.rope_dim = 4;
  c.rope_theta = 10000.0f;
  std::vector<float> f = rope_inverse_frequencies(c, nullptr);
  REQUIRE(f.size() == 2);
  CHECK(f[0] == doctest::Approx(1.0));
  CHECK(f[1] == doctest::Approx(0.01));

  const float divisors[] = {1.0f, 4.0f};
  f = rope_inverse_frequencies(c, divisors);
  CHECK(f[1] == doctest::Approx(0.0025));

  // Llama 3.1 with an original context of 100 tokens, factor 8, low 1, high 4:
  // pair 0 has wavelength 2*pi (< 25, kept); pair 1 has wavelength 628 (> 100, divided by 8).
  c.rope_scaling = Llama3RopeScaling{8.0f, 1.0f, 4.0f, 100};
  f = rope_inverse_frequencies(c, nullptr);
  CHECK(f[0] == doctest::Approx(1.0));
  CHECK(f[1] == doctest::Approx(0.01 / 8));
}

TEST_CASE("silu_mul and embedding_gather") {
  const std::vector<float> gate = {0.0f, 1.0f};
  const std::vector<float> up = {5.0f, 2.0f};
  std::vector<float> out(2);
  cpu::silu_mul(gate.data(), up.data(), out.data(), 2);
  CHECK(out[0] == 0.0f);
  CHECK(out[1] == doctest::Approx(2.0 / (1.0 + std::exp(-1.0))));

  const std::vector<float> table = {0, 1, 10, 11, 20, 21};  // (3 tokens, dim 2)
  const std::vector<int32_t> ids = {2, 0};
  std::vector<float> rows(4);
  cpu::embedding_gather(table.data(), ids, rows.data(), 2);
  CHECK(rows == std::vector<float>{20, 21, 0, 1});
}
