#include "cpu/q8_activations.h"

#include <cmath>
#include <limits>

#include "util/half.h"

namespace pagedgen::cpu {

namespace {

float round_to_half(float f) { return half_to_float(float_to_half(f)); }

void quantize_block(const float* x, Q8Block& out) {
  float amax = 0.0f;
  bool finite = true;
  for (int i = 0; i < 32; ++i) {
    finite = finite && std::isfinite(x[i]);
    amax = std::max(amax, std::fabs(x[i]));
  }
  if (!finite) {
    out = Q8Block{};
    out.d = out.s = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  const float d = amax / 127.0f;
  const float inverse = amax != 0.0f ? 127.0f / amax : 0.0f;
  int sums[2] = {0, 0};
  for (int i = 0; i < 32; ++i) {
    // |x * inverse| <= 127 (plus rounding), so the conversion never overflows.
    const auto q = static_cast<int>(std::nearbyint(x[i] * inverse));
    out.q[i] = static_cast<int8_t>(q);
    sums[i / 16] += q;
  }
  out.d = round_to_half(d);
  out.s = round_to_half(d * static_cast<float>(sums[0] + sums[1]));
  out.qsum[0] = static_cast<int16_t>(sums[0]);
  out.qsum[1] = static_cast<int16_t>(sums[1]);
}

}  // namespace

void quantize_rows_q8(const float* x, std::size_t rows, std::size_t cols, Q8Block* out, CpuIsa isa) {
  if (isa != CpuIsa::kGeneric) {
    quantize_rows_q8_avx2(x, rows, cols, out);
    return;
  }
  const std::size_t num_blocks = cols / 32;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t b = 0; b < num_blocks; ++b) quantize_block(x + r * cols + 32 * b, out[r * num_blocks + b]);
}

}  // namespace pagedgen::cpu
