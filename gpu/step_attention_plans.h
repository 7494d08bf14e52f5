// How one step's attention runs on the device, per window of the model's layers: the
// full-attention layers of a bfloat16 or float16 step on tensor cores where they can
// (prefill, and decode with a shared prefix that pays: tensor_attention_plan.h), else on the
// CUDA-core kernel (attention_plan.h), as are float32, the sliding-window layers,
// soft-capped scores and the head dimensions the tensor kernel lacks.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "attention_plan.h"
#include "device_dtype.h"
#include "model/layer_op.h"
#include "model/model_config.h"
#include "step/step_batch.h"
#include "tensor_attention_plan.h"

namespace pagedgen::gpu {

// The CUDA-core attention plans of a step, by the layers' window: kFullLayers for the
// layers that attend to every position, kWindowLayers for those with a sliding window.
enum AttentionPlanIndex : std::size_t { kFullLayers = 0, kWindowLayers = 1 };

// What the Attention ops of a layer program (model/layer_program.h) ask of a step's plans.
struct ProgramAttention {
  std::vector<std::size_t> op_indices;  // where the Attention ops sit in the program, in order
  bool has_full_layers = false;         // some layer attends to every position
  int32_t window = 0;                   // the window of the layers that have one (0: none)
  bool scores_softcapped = false;       // some layer soft-caps its scores
};
ProgramAttention program_attention(std::span<const LayerOp> program);

struct StepAttentionPlans {
  std::optional<TensorAttentionPlan> tensor;  // the full-attention layers', when on tensor cores
  std::array<AttentionPlan, 2> cuda_core;     // by AttentionPlanIndex; empty where no layer uses it
};

// The plans of `batch` for a model of `config` whose program is `attention`, in `dtype`;
// no launch needs more than max_partials partial slots.
StepAttentionPlans plan_step_attention(const StepBatch& batch, const ProgramAttention& attention,
                                       const ModelConfig& config, DeviceDtype dtype, int64_t max_partials);

}  // namespace pagedgen::gpu
