// The reference prompts run through the paged engine, greedily, in one batched run: what
// the end-to-end reference tests compare with llama.cpp's greedy tokens.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "io/output_record.h"
#include "reference_data.h"

namespace pagedgen::test {

struct ReferenceEngineRun {
  int32_t block_size = 16;
  int32_t max_batch_tokens = 2048;
  int32_t num_blocks = 256;
  int64_t max_model_len = 0;
};

// Each prompt's prompt_ids continued by as many greedy tokens (argmax, EOS ignored) as its
// greedy_ids hold: the engine's completion (ids and text), indexed like `prompts`.
std::vector<Completion> engine_greedy(Backend& backend, const Tokenizer& tokenizer,
                                                const std::vector<ReferencePrompt>& prompts,
                                                const ReferenceEngineRun& run);

}  // namespace pagedgen::test
