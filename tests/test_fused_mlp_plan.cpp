// When the CUDA backend fuses the MLP's gate/up projection and activation
// (gpu/fused_mlp_plan.h): bfloat16 and float16 steps of 1 to kFusedMlpMaxRows rows whose
// hidden size is a multiple of the 16-byte vector; float32 never (its exactness path). The
// kernel itself takes up to kFusedMlpKernelMaxRows rows (for the benchmark).
#include <doctest/doctest.h>

#include "fused_mlp_plan.h"

using namespace pagedgen;
using gpu::DeviceDtype;

TEST_CASE("fused MLP: the decode buckets up to 8 rows, bfloat16 and float16 only, hidden a multiple of 8") {
  CHECK(gpu::kFusedMlpMaxRows == 8);
  for (const DeviceDtype dtype : {DeviceDtype::BF16, DeviceDtype::F16}) {
    for (int32_t rows = 1; rows <= 8; ++rows) {
      CAPTURE(rows);
      CHECK(gpu::use_fused_mlp(dtype, rows, 576));   // SmolLM2-135M
      CHECK(gpu::use_fused_mlp(dtype, rows, 4096));  // Llama-3-8B
      CHECK(gpu::use_fused_mlp(dtype, rows, 8));
    }
    CHECK_FALSE(gpu::use_fused_mlp(dtype, 0, 576));
    for (int32_t rows = 9; rows <= 17; ++rows) {  // the kernel takes 9 to 16; the backend does not ask
      CAPTURE(rows);
      CHECK_FALSE(gpu::use_fused_mlp(dtype, rows, 576));
      CHECK_FALSE(gpu::use_fused_mlp(dtype, rows, 4096));
    }
    CHECK_FALSE(gpu::use_fused_mlp(dtype, 1, 100));  // not a whole number of 16-byte vectors
    CHECK_FALSE(gpu::use_fused_mlp(dtype, 1, 4));
    CHECK_FALSE(gpu::use_fused_mlp(dtype, 1, 0));
  }
  for (int32_t rows = 0; rows <= 9; ++rows) CHECK_FALSE(gpu::use_fused_mlp(DeviceDtype::F32, rows, 576));
  CHECK(gpu::fused_mlp_supports(8, 2056));
  CHECK_FALSE(gpu::fused_mlp_supports(8, 2052));
  CHECK(gpu::kFusedMlpKernelMaxRows == 16);
  CHECK(gpu::fused_mlp_supports(12, 4096));
  CHECK(gpu::fused_mlp_supports(16, 576));
  CHECK_FALSE(gpu::fused_mlp_supports(17, 576));
  CHECK_FALSE(gpu::fused_mlp_supports(0, 576));
}
