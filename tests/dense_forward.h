// The numeric reference: the forward pass of every architecture ModelConfig describes (the
// Llama block and its relatives' extras: q/k norms, post norms, GeGLU, soft-caps, sliding
// windows) for one sequence on a dense (contiguous) KV cache, on the CPU. Deliberately
// plain and written apart from the backends' layer code: the oracle the paged engine is
// checked against, so it lives with the tests, not in the library users run.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "model/model_config.h"
#include "model/model_weights.h"
#include "step/ids.h"

namespace pagedgen {

class DenseForward {
 public:
  // `capacity_tokens`: the most tokens the sequence may hold (prompt + generated).
  DenseForward(const ModelConfig& config, const ModelWeights& weights, std::size_t capacity_tokens);

  // Runs `tokens` at the next positions, appending their K/V. Returns the logits of the
  // last token (vocab), or of every token (tokens.size(), vocab) when all_rows is set.
  // Throws Error when a token id is out of the vocabulary or the capacity is exceeded.
  std::vector<float> forward(std::span<const TokenId> tokens, bool all_rows = false);

  std::size_t num_tokens() const { return num_tokens_; }
  void reset() { num_tokens_ = 0; }

 private:
  void attention(std::size_t layer, std::size_t num_new, const float* q, float* out) const;

  const ModelConfig& config_;
  const ModelWeights& weights_;
  std::size_t capacity_tokens_;
  std::size_t num_tokens_ = 0;
  std::vector<std::vector<float>> k_cache_;  // per layer: (capacity, num_kv_heads, head_dim)
  std::vector<std::vector<float>> v_cache_;  // per layer: (capacity, num_kv_heads, head_dim)
};

// Greedy decoding on the reference path: argmax at every step, `num_steps` new tokens
// (stops early only at capacity). Returns the new token ids.
std::vector<TokenId> greedy_decode(DenseForward& model, std::span<const TokenId> prompt, std::size_t num_steps);

}  // namespace pagedgen
