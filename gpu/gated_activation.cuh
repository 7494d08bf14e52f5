// The MLP's gated activation of one element, act(gate) * up with act silu (SwiGLU) or GELU
// in its tanh form (GeGLU): cpu::silu_mul and cpu::gelu_tanh_mul's expressions, shared by
// the activation kernel (llama_kernels.cu) and the fused gate/up kernel (fused_mlp_kernel.cu).
// For .cu files only.
#pragma once

#include "model/model_config.h"

namespace pagedgen::gpu {

__device__ __forceinline__ float gated(MlpActivation activation, float gate, float up) {
  if (activation == MlpActivation::kSilu) return gate / (1.0f + expf(-gate)) * up;
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCubic = 0.044715f;
  return 0.5f * gate * (1.0f + tanhf(kSqrt2OverPi * gate * (1.0f + kCubic * gate * gate))) * up;
}

}  // namespace pagedgen::gpu
