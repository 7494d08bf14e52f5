// The CPU's int8 fast path: activation quantization, packed weights and quant_gemm, on
// every quantized format. Checked: a hand-worked block; packed rows dequantize to exactly
// dequantize()'s values; every instruction-set path gives the same bits; a row's outputs do
// not depend on the batch or thread count; and the products are within float rounding of a
// double-precision dot product of the same integers and scales.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cpu/cpu_isa.h"
#include "cpu/q8_activations.h"
#include "cpu/quant_gemm.h"
#include "logits_compare.h"
#include "model/dequant.h"
#include "model/packed_matrix.h"
#include "model/quant_blocks.h"
#include "util/half.h"

using namespace pagedgen;
using namespace pagedgen::cpu;

namespace {

constexpr GgmlType kFormats[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                                 GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

void put_half(uint8_t* p, float value) {
  const uint16_t h = float_to_half(value);
  p[0] = static_cast<uint8_t>(h & 0xff);
  p[1] = static_cast<uint8_t>(h >> 8);
}

// Random blocks of `type` for a (rows, cols) tensor, with sane float16 scales.
std::vector<uint8_t> random_tensor(GgmlType type, std::size_t rows, std::size_t cols, std::mt19937& rng) {
  const QuantFormat f = *quant_format(type);
  const std::size_t num_blocks = rows * cols / f.block_elements;
  std::vector<uint8_t> data(num_blocks * f.block_bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (uint8_t& b : data) b = static_cast<uint8_t>(byte(rng));
  for (std::size_t b = 0; b < num_blocks; ++b) {
    uint8_t* block = data.data() + b * f.block_bytes;
    if (type == GgmlType::Q6_K) {
      put_half(block + 208, scale(rng));
      continue;
    }
    put_half(block, scale(rng));
    if (f.has_min) put_half(block + 2, scale(rng));
  }
  return data;
}

std::vector<float> random_activations(std::size_t rows, std::size_t cols, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(rows * cols);
  for (float& v : x) v = normal(rng);
  return x;
}

std::vector<float> run_quant_gemm(const PackedMatrix& w, const std::vector<Q8Block>& xq, std::size_t rows, CpuIsa isa,
                                  std::size_t threads) {
  CpuThreadPool pool(threads);
  std::vector<float> y(rows * w.rows(), -1.0f);
  quant_gemm(xq.data(), rows, w, y.data(), pool, isa);
  return y;
}

using test::same_bits;

std::vector<CpuIsa> isas() { return supported_cpu_isas(); }

}  // namespace

TEST_CASE("a Q4_1 block worked by hand") {
  // d = 0.5, m = -1, stored nibbles u_i = i % 16: weight i = 0.5 * (i % 16) - 1.
  uint8_t block[20];
  put_half(block, 0.5f);
  put_half(block + 2, -1.0f);
  for (int i = 0; i < 16; ++i) block[4 + i] = static_cast<uint8_t>(i | (i << 4));
  // x = (127, 1, 1, ..., 1): amax 127, so d = 1 and q = x; sum(q) = 158.
  std::vector<float> x(32, 1.0f);
  x[0] = 127.0f;
  Q8Block xq;
  quantize_rows_q8(x.data(), 1, 32, &xq);
  CHECK(xq.d == 1.0f);
  CHECK(xq.s == 158.0f);
  CHECK(xq.qsum[0] == 127 + 15);
  CHECK(xq.qsum[1] == 16);
  // isum = sum u_i q_i = 0 * 127 + (1 + ... + 15) + (0 + ... + 15) = 240;
  // y = fma(0.5 * 1, 240, 0) = 120, then fma(-1, 158, 120) = -38 = sum w_i x_i.
  const PackedMatrix w(GgmlType::Q4_1, block, 1, 32);
  for (CpuIsa isa : isas()) {
    CpuThreadPool pool(1);
    float y = 0.0f;
    quant_gemm(&xq, 1, w, &y, pool, isa);
    CHECK(y == -38.0f);
  }
}

TEST_CASE("activation quantization: rounding to even, float16 scales, non-finite blocks") {
  std::vector<float> x(64, 0.0f);
  x[0] = 2.54f;   // amax: scale 127 / 2.54 = 50; d = 0.02 (float16-rounded)
  x[1] = 0.01f;   // 0.5 -> 0 (to even)
  x[2] = 0.03f;   // 1.5 -> 2
  x[3] = -0.05f;  // -2.5 -> -2
  x[32] = std::nanf("");
  std::vector<Q8Block> q(2);
  quantize_rows_q8(x.data(), 1, 64, q.data());
  CHECK(q[0].q[0] == 127);
  CHECK(q[0].q[1] == 0);
  CHECK(q[0].q[2] == 2);
  CHECK(q[0].q[3] == -2);
  CHECK(q[0].d == half_to_float(float_to_half(2.54f / 127.0f)));
  CHECK(q[0].qsum[0] == 127);
  CHECK(std::isnan(q[1].d));
  CHECK(std::isnan(q[1].s));
  std::vector<float> zeros(32, 0.0f);
  quantize_rows_q8(zeros.data(), 1, 32, q.data());
  CHECK(q[0].d == 0.0f);
  CHECK(q[0].q[5] == 0);
}

TEST_CASE("activation quantization: every instruction set gives the same blocks") {
  std::mt19937 rng(5);
  const std::size_t rows = 7, cols = 1536;
  std::vector<float> x = random_activations(rows, cols, rng);
  // Exact ties (amax 127: the scale is 1, values k + 0.5), zeros, a lone large value and a
  // non-finite block.
  x[0] = 127.0f;
  for (std::size_t i = 1; i < 32; ++i) x[i] = static_cast<float>(i) - 15.5f;
  std::fill(x.begin() + 32, x.begin() + 64, 0.0f);
  x[64 + 3] = 1e30f;
  x[96 + 7] = std::numeric_limits<float>::infinity();
  std::vector<Q8Block> reference(rows * cols / 32);
  quantize_rows_q8(x.data(), rows, cols, reference.data(), CpuIsa::kGeneric);
  for (CpuIsa isa : isas()) {
    CAPTURE(cpu_isa_name(isa));
    std::vector<Q8Block> q(reference.size());
    quantize_rows_q8(x.data(), rows, cols, q.data(), isa);
    std::size_t differing = 0;
    for (std::size_t b = 0; b < q.size(); ++b)
      differing += std::memcmp(q[b].q, reference[b].q, 32) != 0 || q[b].qsum[0] != reference[b].qsum[0] ||
                   q[b].qsum[1] != reference[b].qsum[1] ||
                   std::bit_cast<uint32_t>(q[b].d) != std::bit_cast<uint32_t>(reference[b].d) ||
                   std::bit_cast<uint32_t>(q[b].s) != std::bit_cast<uint32_t>(reference[b].s);
    CHECK(differing == 0);
  }
  CHECK(std::isnan(reference[3].d));
}

TEST_CASE("packed rows dequantize to dequantize()'s values, bit for bit") {
  std::mt19937 rng(7);
  for (GgmlType type : kFormats) {
    CAPTURE(ggml_type_name(type));
    const std::size_t rows = 11, cols = 512;
    const std::vector<uint8_t> data = random_tensor(type, rows, cols, rng);
    std::vector<float> expected(rows * cols);
    dequantize(type, std::as_bytes(std::span(data)), expected);
    const PackedMatrix w(type, data.data(), rows, cols);
    std::vector<float> row(cols);
    for (std::size_t r = 0; r < rows; ++r) {
      w.dequantize_row(r, row.data());
      CHECK(std::memcmp(row.data(), expected.data() + r * cols, cols * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("quant_gemm: same bits on every path, batch and thread count; near the exact product") {
  std::mt19937 rng(11);
  for (GgmlType type : kFormats) {
    CAPTURE(ggml_type_name(type));
    const std::size_t out_features = 37, in_features = 768, rows = 19;  // every tile height
    const std::vector<uint8_t> data = random_tensor(type, out_features, in_features, rng);
    const PackedMatrix w(type, data.data(), out_features, in_features);
    const std::vector<float> x = random_activations(rows, in_features, rng);
    const std::size_t nb = in_features / 32;
    std::vector<Q8Block> xq(rows * nb);
    quantize_rows_q8(x.data(), rows, in_features, xq.data());

    const std::vector<float> reference = run_quant_gemm(w, xq, rows, CpuIsa::kGeneric, 1);
    for (CpuIsa isa : isas()) {
      CAPTURE(cpu_isa_name(isa));
      for (std::size_t threads : {1, 2, 3}) CHECK(same_bits(run_quant_gemm(w, xq, rows, isa, threads), reference));
      // Each row alone, as a decode step would run it.
      for (std::size_t r = 0; r < rows; ++r) {
        const std::vector<Q8Block> one(xq.begin() + static_cast<std::ptrdiff_t>(r * nb),
                                       xq.begin() + static_cast<std::ptrdiff_t>((r + 1) * nb));
        const std::vector<float> alone = run_quant_gemm(w, one, 1, isa, 2);
        CHECK(std::memcmp(alone.data(), reference.data() + r * out_features, out_features * sizeof(float)) == 0);
      }
    }

    // Against double sums of the dequantized weights times the dequantized activations:
    // they differ only by float rounding (and the float16 rounding of s, ggml's too).
    std::vector<float> wf(out_features * in_features);
    dequantize(type, std::as_bytes(std::span(data)), wf);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < out_features; ++c) {
        double exact = 0.0, magnitude = 0.0;
        for (std::size_t k = 0; k < in_features; ++k) {
          const Q8Block& xb = xq[r * nb + k / 32];
          const double xk = static_cast<double>(xb.q[k % 32]) * xb.d;
          exact += static_cast<double>(wf[c * in_features + k]) * xk;
          magnitude += std::fabs(static_cast<double>(wf[c * in_features + k]) * xk);
        }
        CHECK(std::fabs(reference[r * out_features + c] - exact) <= 2e-3 * magnitude + 1e-6);
      }
    }
  }
}
