#include "cpu/quant_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "cpu/quant_tile.h"
#include "util/error.h"

namespace pagedgen::cpu {

namespace {

template <typename T>
T load(const uint8_t* record, uint32_t offset, std::size_t index) {
  T value;
  std::memcpy(&value, record + offset + index * sizeof(T), sizeof(T));
  return value;
}

constexpr std::size_t kGenericMaxRows = 8;

// The definition every SIMD path reproduces (quant_gemm.h). A row of w's block is unpacked
// once for all the tile's activation rows; each output keeps its own chain of fmas over the
// blocks in order, so the loop order changes no bit.
void generic_tile(const PackedMatrix& w, const QuantTile& tile) {
  const QuantFormat& format = w.format();
  const PackedLayout& layout = w.layout();
  const std::size_t nb = w.num_blocks();
  const int32_t offset = w.weight_offset();
  for (std::size_t c = 0; c < tile.num_cols; ++c) {
    float acc[kGenericMaxRows] = {};
    for (std::size_t b = 0; b < nb; ++b) {
      const uint8_t* rec = w.record(tile.group, b);
      const int32_t sub0 = format.has_sub_scales ? load<int32_t>(rec, layout.sub, c) : 1;
      const int32_t sub1 = format.has_sub_scales ? load<int32_t>(rec, layout.sub, PackedMatrix::kGroupRows + c) : 1;
      const float scale = w.scale(rec, c);
      const float min = format.has_min ? w.min(rec, c) : 0.0f;
      int32_t q[32];
      w.stored_weights(rec, c, q);
      for (std::size_t r = 0; r < tile.num_rows; ++r) {
        const Q8Block& x = tile.x[r * nb + b];
        int32_t half[2] = {0, 0};
        for (int i = 0; i < 16; ++i) half[0] += q[i] * x.q[i];
        for (int i = 16; i < 32; ++i) half[1] += q[i] * x.q[i];
        const int32_t isum = sub0 * (half[0] - offset * x.qsum[0]) + sub1 * (half[1] - offset * x.qsum[1]);
        acc[r] = std::fma(scale * x.d, static_cast<float>(isum), acc[r]);
        if (format.has_min) acc[r] = std::fma(min, x.s, acc[r]);
      }
    }
    for (std::size_t r = 0; r < tile.num_rows; ++r) tile.y[r * tile.y_stride + c] = acc[r];
  }
}

// Groups of 16 columns per parallel task: a task's records stay in a core's L2 while the
// activation rows stream past, and there are enough tasks for every thread.
std::size_t groups_per_task(const PackedMatrix& w, std::size_t num_threads) {
  constexpr std::size_t kL2Bytes = 512 * 1024;
  const std::size_t group_bytes = w.num_blocks() * w.layout().bytes;
  const std::size_t fit = std::max<std::size_t>(1, kL2Bytes / group_bytes);
  return std::max<std::size_t>(1, std::min(fit, w.num_groups() / (4 * num_threads)));
}

}  // namespace

QuantKernel quant_kernel_generic() { return {&generic_tile, kGenericMaxRows}; }

QuantKernel quant_kernel(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kGeneric:
      return quant_kernel_generic();
    case CpuIsa::kAvx2:
      return quant_kernel_avx2();
    case CpuIsa::kAvxVnni:
      return quant_kernel_avx_vnni();
    case CpuIsa::kAvx512Vnni:
      return quant_kernel_avx512_vnni();
  }
  PG_CHECK(false, "unknown instruction set {}", static_cast<int>(isa));
  return quant_kernel_generic();
}

void quant_gemm(const Q8Block* x, std::size_t rows, std::span<const QuantProduct> products, CpuThreadPool& pool,
                CpuIsa isa) {
  if (rows == 0 || products.empty()) return;
  const QuantKernel kernel = quant_kernel(isa);
  const std::size_t nb = products[0].w->num_blocks();
  // Task t of the region is task t - first_task[p] of the product p it falls in.
  constexpr std::size_t kMaxProducts = 4;
  PG_CHECK(products.size() <= kMaxProducts, "{} products in one quant_gemm, at most {}", products.size(), kMaxProducts);
  std::size_t per_task[kMaxProducts], first_task[kMaxProducts + 1] = {0};
  for (std::size_t p = 0; p < products.size(); ++p) {
    const PackedMatrix& w = *products[p].w;
    PG_CHECK(w.num_blocks() == nb, "products of {} and {} input blocks in one quant_gemm", nb, w.num_blocks());
    per_task[p] = groups_per_task(w, pool.num_threads());
    first_task[p + 1] = first_task[p] + (w.num_groups() + per_task[p] - 1) / per_task[p];
  }
  pool.run(first_task[products.size()], [&](std::size_t task, std::size_t) {
    std::size_t p = 0;
    while (task >= first_task[p + 1]) ++p;
    const PackedMatrix& w = *products[p].w;
    const std::size_t group_begin = (task - first_task[p]) * per_task[p];
    const std::size_t group_end = std::min(w.num_groups(), group_begin + per_task[p]);
    for (std::size_t row = 0; row < rows; row += kernel.max_rows) {
      for (std::size_t group = group_begin; group < group_end; ++group) {
        const std::size_t col = group * PackedMatrix::kGroupRows;
        kernel.run(w, QuantTile{.x = x + row * nb,
                                .num_rows = std::min(kernel.max_rows, rows - row),
                                .group = group,
                                .y = products[p].y + row * w.rows() + col,
                                .y_stride = w.rows(),
                                .num_cols = std::min(PackedMatrix::kGroupRows, w.rows() - col),
                                .first_pass = row == 0});
      }
    }
  });
}

}  // namespace pagedgen::cpu
