// The Backend contract: the only thing that differs between CPU and CUDA. It sizes and owns
// the KV pool (K and V per layer as [num_blocks][num_kv_heads][block_size][head_dim], see
// kv_layout.h; with sliding-window layers one pool per layer kind, step/kv_kinds.h) and runs steps: a StepBatch
// forward, then the sampling of a SamplingBatch, giving token ids. The engine never sees logits.
//
// A step is submitted, then collected, so that the host can prepare step N+1 while step N
// runs (the engine's overlap, engine.h):
//   copy_blocks(N); submit(N)          queued behind whatever runs; returns at once on a GPU
//   copy_blocks(N+1); submit(N+1, overlap_tokens)   N+1 reads some input ids from N's results
//   collect() -> N's ids; collect() -> N+1's ids   in submission order
// A backend that computes a step at once (CPU, dry run, tests) implements step() only; the
// default submit()/collect() run it at submission (synchronous_steps.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backend/kv_pool_budget.h"
#include "backend/synchronous_steps.h"
#include "sample/sampling_batch.h"
#include "step/ids.h"
#include "step/kv_kinds.h"
#include "step/step_batch.h"
#include "util/error.h"

namespace pagedgen {

// Device memory a backend holds, in bytes; all zero for the CPU backend.
struct DeviceMemoryReport {
  int64_t weight_bytes = 0;
  int64_t kv_pool_bytes = 0;
  int64_t activation_bytes = 0;  // activations, attention and GEMM workspaces
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  // Where it runs, for the stats: the GPU's name, empty on the CPU.
  virtual std::string device() const { return {}; }

  // Bytes one KV block takes across all layers (K and V), at this backend's KV dtype.
  virtual std::size_t kv_bytes_per_block(std::size_t block_size) const = 0;

  // The pool a budget allows, in blocks of block_size tokens. Throws SettingError when it
  // allows none.
  virtual int32_t kv_pool_blocks(const KvPoolBudget& budget, std::size_t block_size) const {
    return host_pool_blocks(budget, kv_bytes_per_block(block_size), block_size);
  }

  // The layer kinds its pools can take (step/kv_kinds.h), kind 0 first, as their windows;
  // the default: one kind (every layer), as a backend without sliding windows has.
  virtual std::vector<int32_t> kv_kind_windows() const { return {0}; }
  // Bytes one KV block of `kind` takes across that kind's layers (K and V).
  virtual std::size_t kv_kind_bytes_per_block(KvKindId kind, std::size_t block_size) const {
    PG_CHECK(kind == 0, "layer kind {} of a backend with one kind", kind);
    return kv_bytes_per_block(block_size);
  }

  // (Re)allocates the KV pool as one kind: num_blocks blocks of block_size token slots each,
  // every layer addressed by kind 0's block ids.
  virtual void allocate_kv_pool(std::size_t num_blocks, std::size_t block_size) = 0;
  // (Re)allocates one pool per kind of kv_kind_windows(): kind k's layers get
  // kind_num_blocks[k] blocks, addressed by kind k's ids (StepBatch::window_kinds).
  virtual void allocate_kv_pools(std::span<const int32_t> kind_num_blocks, std::size_t block_size) {
    PG_CHECK(kind_num_blocks.size() == 1, "{} layer kinds for a backend with one kind", kind_num_blocks.size());
    allocate_kv_pool(static_cast<std::size_t>(kind_num_blocks.front()), block_size);
  }

  // Copy-on-write and partial prefix matches: copies whole blocks in every layer of the
  // copy's kind, in order, after the steps submitted before and before the steps submitted after.
  virtual void copy_blocks(std::span<const BlockCopy> copies) = 0;

  // One engine step at once: writes the new tokens' K/V at their slots, attends over each
  // sequence's blocks, and samples every row of `sampling` from the logits of its
  // batch.logits_rows entry. Returns one SampledToken per sampling row, in order (none for
  // a row whose logits are not usable), then one per prompt row (sampling_batch.h), which
  // only a backend whose computes_logprobs() is true is given. A row's token never depends on the other sequences
  // in the batch, the block size or the block ids (determinism contract).
  virtual std::vector<SampledToken> step(const StepBatch& batch, const SamplingBatch& sampling) = 0;

  // The same step, queued: it runs after the steps submitted before it. `overlap_tokens`
  // lists the input tokens whose ids are the results of the step submitted just before (their
  // value in batch.token_ids is a placeholder; a row with no token gives kFailedRowInputToken).
  // `batch` and `sampling` (and what they point to) may change or go once submit returns.
  // At most two steps are submitted and not yet collected.
  virtual void submit(const StepBatch& batch, const SamplingBatch& sampling,
                      std::span<const OverlapToken> overlap_tokens) {
    synchronous_steps_.submit(batch, overlap_tokens, [&](const StepBatch& b) { return step(b, sampling); });
  }
  // Waits for the oldest step submitted and not collected; returns what step() would have.
  virtual std::vector<SampledToken> collect() { return synchronous_steps_.collect(); }

  // Whether step() honours SamplingRow::allowed_tokens (structured outputs). A backend that
  // does not is never given a row with a mask: the requests that need one are refused
  // before they reach the engine.
  virtual bool applies_token_masks() const { return false; }
  // Whether step() applies the penalties and logit_bias of SamplingParams, and whether it
  // returns SampledToken::logprobs for rows whose params ask; the same rule: a backend
  // that does not is never given such a row.
  virtual bool applies_penalties() const { return false; }
  virtual bool computes_logprobs() const { return false; }

  // What the backend holds on a device (for the stats); the CPU backend holds nothing there.
  virtual DeviceMemoryReport device_memory() const { return {}; }

 private:
  SynchronousSteps synchronous_steps_;  // the default submit()/collect()'s results
};

}  // namespace pagedgen
