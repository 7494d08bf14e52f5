// The reference prompts run through the paged engine, greedily, in one batched run: what
// the end-to-end reference tests compare with llama.cpp's greedy tokens.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "backend/logits_backend.h"
#include "io/output_record.h"
#include "paged_batch_builder.h"
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
                                      const std::vector<ReferencePrompt>& prompts, const ReferenceEngineRun& run);

// Teacher-forced greedy over a prompt's reference tokens: from `logits` (the prompt's
// last-token logits on `backend`), each step's argmax (first on ties) is compared with the
// reference's token, which is then fed to sequence `seq`, so that one near-tie does not
// change every later step. A step that differs must be one where the reference's own top two
// logits are closer than `margin` (checked here).
struct TeacherForcedGreedy {
  std::size_t num_steps = 0;
  std::size_t num_equal = 0;
  float worst_margin = 0.0f;  // the largest reference margin among the differing steps
};
TeacherForcedGreedy teacher_forced_greedy(LogitsBackend& backend, PagedBatchBuilder& builder, std::size_t seq,
                                          const ReferencePrompt& prompt, std::vector<float>& logits, float margin);

}  // namespace pagedgen::test
