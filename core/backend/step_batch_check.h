// Validation of a StepBatch against a KV pool and a vocabulary, shared by the backends. The
// CUDA kernels cannot raise errors, so every index they will follow (token ids, slots,
// positions, block-table entries up to each token's position) is checked here on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "backend/kv_layout.h"
#include "step/step_batch.h"

namespace pagedgen {

// Throws Error for a token id outside the vocabulary (an input problem) and fails a
// PG_CHECK for anything else inconsistent (array sizes, block size, slots, positions,
// block ids outside the pool, a logits buffer of the wrong size). `kind_layouts`: the pool of
// each layer kind, kind 0 first (one for a model of one kind); kind k's slots and tables are
// checked against its own.
void check_step_batch(const StepBatch& batch, std::span<const KvLayout> kind_layouts, int64_t vocab_size,
                      std::size_t logits_size);

}  // namespace pagedgen
