// DecodeRows: a decode step's token rows (decode_graphs.h) padded to its batch-size bucket,
// on the device at addresses the decode graphs keep. The padding rows read token 0 at
// position 0, write no KV slot (-1), and get logits like every row, which no one reads:
//
//   row     0 .. num_seqs-1 | num_seqs .. bucket-1
//   ids     the batch's     | 0
//   slots   the batch's     | -1 (every layer kind)
//   logits  rows 0 .. bucket-1 (a decode step's logits_rows are 0 .. num_seqs-1)
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "device_kv_pools.h"
#include "staged_upload.h"
#include "step/step_batch.h"
#include "step_arrays.h"

namespace pagedgen::gpu {

class DecodeRows {
 public:
  // Queues the upload of `batch`'s rows padded to `bucket` (the slots of its first num_kinds
  // layer kinds) on `stream`; where the kernels read them.
  RowArrays upload(const StepBatch& batch, int32_t bucket, std::size_t num_kinds, cudaStream_t stream);

  std::size_t device_bytes() const { return upload_.device_bytes(); }
  // Counts the moves of the rows' device address (a CUDA graph keeps the old one).
  uint64_t device_generation() const { return upload_.device_generation(); }

 private:
  // The padded rows on the host: scratch kept between steps, so that a step allocates none.
  std::vector<int32_t> ids_, positions_, logits_rows_;   // [bucket]
  std::array<std::vector<int64_t>, kMaxKvKinds> slots_;  // by layer kind: [bucket]
  StagedUpload upload_;
};

}  // namespace pagedgen::gpu
