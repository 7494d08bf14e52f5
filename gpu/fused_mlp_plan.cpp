#include "fused_mlp_plan.h"

namespace pagedgen::gpu {

bool fused_mlp_supports(int32_t num_rows, int64_t hidden) {
  return num_rows >= 1 && num_rows <= kFusedMlpKernelMaxRows && hidden > 0 && hidden % kFusedMlpVectorElements == 0;
}

bool use_fused_mlp(DeviceDtype dtype, int32_t num_rows, int64_t hidden) {
  return dtype != DeviceDtype::F32 && num_rows <= kFusedMlpMaxRows && fused_mlp_supports(num_rows, hidden);
}

}  // namespace pagedgen::gpu
