// Fused weight tensors as llama.cpp's converter writes them for Phi-3: attn_qkv (the Q, K
// and V rows one after the other) and ffn_up holding the gate rows, then the up rows. Each
// is split into views of its row ranges under the separate names (attn_q, attn_k, attn_v,
// ffn_gate, ffn_up), so every loader and backend sees the Llama block's matrices.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/raw_tensor.h"

namespace pagedgen {

// `tensors` with each fused tensor replaced by its parts (views into the same bytes).
// Throws Error naming the tensor when a fused one has the wrong number of rows.
std::vector<RawTensor> split_fused_tensors(std::span<const RawTensor> tensors, const ModelConfig& config,
                                           const std::string& source);

}  // namespace pagedgen
