#include "step_attention_plans.h"

#include <algorithm>
#include <variant>

#include "tensor_attention_kernel.h"

namespace pagedgen::gpu {

namespace {

// Cascade decode (bfloat16 and float16, kCascadePolicy in tensor_attention_plan.h): in
// parts of 512 positions (more when the partials would not fit). Chosen, not measured yet.
constexpr int32_t kCascadeChunkTokens = 512;

}  // namespace

ProgramAttention program_attention(std::span<const LayerOp> program) {
  ProgramAttention attention;
  for (std::size_t i = 0; i < program.size(); ++i) {
    const auto* a = std::get_if<Attention>(&program[i]);
    if (a == nullptr) continue;
    attention.op_indices.push_back(i);
    attention.has_full_layers = attention.has_full_layers || a->window == 0;
    attention.window = std::max(attention.window, a->window);
    attention.scores_softcapped = attention.scores_softcapped || a->softcap != 0.0f;
  }
  return attention;
}

StepAttentionPlans plan_step_attention(const StepBatch& batch, const ProgramAttention& attention,
                                       const ModelConfig& config, DeviceDtype dtype, int64_t max_partials) {
  const auto group = static_cast<int32_t>(config.num_heads) / static_cast<int32_t>(config.num_kv_heads);
  StepAttentionPlans plans;
  if (dtype != DeviceDtype::F32 && attention.has_full_layers && !attention.scores_softcapped &&
      tensor_attention_supports_head_dim(config.head_dim))
    plans.tensor = plan_tensor_attention(batch, group, kCascadePolicy, kCascadeChunkTokens, max_partials);
  if (attention.has_full_layers && !plans.tensor)
    plans.cuda_core[kFullLayers] = plan_attention(batch, group, max_partials, 0);
  if (attention.window > 0)
    plans.cuda_core[kWindowLayers] = plan_attention(batch, group, max_partials, attention.window);
  return plans;
}

}  // namespace pagedgen::gpu
