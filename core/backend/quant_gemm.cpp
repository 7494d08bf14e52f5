#include "backend/quant_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/quant_tile.h"
#include "util/error.h"

namespace pagedgen::cpu {

namespace {

template <typename T>
T load(const uint8_t* record, uint32_t offset, std::size_t index) {
  T value;
  std::memcpy(&value, record + offset + index * sizeof(T), sizeof(T));
  return value;
}

// The definition every SIMD path reproduces (quant_gemm.h), one output at a time.
void generic_tile(const PackedMatrix& w, const QuantTile& tile) {
  const QuantFormat& format = w.format();
  const PackedLayout& layout = w.layout();
  const std::size_t nb = w.num_blocks();
  const int32_t offset = w.weight_offset();
  for (std::size_t r = 0; r < tile.num_rows; ++r) {
    for (std::size_t c = 0; c < tile.num_cols; ++c) {
      float acc = 0.0f;
      for (std::size_t b = 0; b < nb; ++b) {
        const uint8_t* rec = w.record(tile.group, b);
        const Q8Block& x = tile.x[r * nb + b];
        const int32_t sub0 = format.has_sub_scales ? load<int32_t>(rec, layout.sub, c) : 1;
        const int32_t sub1 = format.has_sub_scales ? load<int32_t>(rec, layout.sub, PackedMatrix::kGroupRows + c) : 1;
        int32_t half[2] = {0, 0};
        for (int i = 0; i < 32; ++i) half[i / 16] += w.stored_weight(rec, c, i) * x.q[i];
        const int32_t isum = sub0 * (half[0] - offset * x.qsum[0]) + sub1 * (half[1] - offset * x.qsum[1]);
        acc = std::fma(load<float>(rec, 0, c) * x.d, static_cast<float>(isum), acc);
        if (format.has_min) acc = std::fma(load<float>(rec, layout.m, c), x.s, acc);
      }
      tile.y[r * tile.y_stride + c] = acc;
    }
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

QuantKernel quant_kernel_generic() { return {&generic_tile, 4}; }

QuantKernel quant_kernel(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kGeneric: return quant_kernel_generic();
    case CpuIsa::kAvx2: return quant_kernel_avx2();
    case CpuIsa::kAvxVnni: return quant_kernel_avx_vnni();
    case CpuIsa::kAvx512Vnni: return quant_kernel_avx512_vnni();
  }
  PG_CHECK(false, "unknown instruction set {}", static_cast<int>(isa));
  return quant_kernel_generic();
}

void quant_gemm(const Q8Block* x, std::size_t rows, const PackedMatrix& w, float* y, CpuThreadPool& pool,
                CpuIsa isa) {
  if (rows == 0 || w.rows() == 0) return;
  const QuantKernel kernel = quant_kernel(isa);
  const std::size_t per_task = groups_per_task(w, pool.num_threads());
  const std::size_t num_tasks = (w.num_groups() + per_task - 1) / per_task;
  const std::size_t nb = w.num_blocks();
  pool.run(num_tasks, [&](std::size_t task, std::size_t) {
    const std::size_t group_end = std::min(w.num_groups(), (task + 1) * per_task);
    for (std::size_t row = 0; row < rows; row += kernel.max_rows) {
      for (std::size_t group = task * per_task; group < group_end; ++group) {
        const std::size_t col = group * PackedMatrix::kGroupRows;
        kernel.run(w, QuantTile{.x = x + row * nb,
                                .num_rows = std::min(kernel.max_rows, rows - row),
                                .group = group,
                                .y = y + row * w.rows() + col,
                                .y_stride = w.rows(),
                                .num_cols = std::min(PackedMatrix::kGroupRows, w.rows() - col)});
      }
    }
  });
}

}  // namespace pagedgen::cpu
