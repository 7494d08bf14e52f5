// What the forward pass of each architecture does, written once: the ops of layer_op.h in
// order, from the token embeddings through every decoder layer to the (soft-capped) logits.
// Both backends run this list (the CPU one op by op, the CUDA one in graph segments cut at
// each Attention); the dense reference in tests/ stays written apart, as the oracle. Here,
// and in the weight loaders, is the only place the architecture's choices are read.
#pragma once

#include <vector>

#include "model/layer_op.h"
#include "model/model_config.h"

namespace pagedgen {

// The ops of one forward pass of `config`'s model:
//
//   EmbedTokens, ResidualNorm(-> attn_norm 0)
//   per layer l:  QkvProjection, QkvRopeKvWrite, Attention, OutputProjection,
//                 ResidualNorm(attn post norm; -> ffn_norm l), GatedActivation, DownProjection,
//                 ResidualNorm(ffn post norm; -> attn_norm l + 1)      (not after the last layer)
//   ResidualNorm(last ffn post norm; -> output_norm, logits rows), Logits, [SoftCapLogits]
std::vector<LayerOp> layer_program(const ModelConfig& config);

}  // namespace pagedgen
