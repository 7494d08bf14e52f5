// What a CudaBackend holds (cuda_backend.h), shared by its two source files:
// cuda_backend.cpp (construction, the KV pools, block copies, steps in and out) and
// cuda_forward.cpp (a step's forward pass). Each concept lives in its own class: the
// weights, the GEMMs, the KV pools, the activation workspace, the step's uploads, the
// sampler, the decode graphs.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "activation_workspace.h"
#include "cuda_backend.h"
#include "cuda_gemm.h"
#include "decode_graphs.h"
#include "decode_rows.h"
#include "device_kv_pools.h"
#include "device_sampler.h"
#include "device_weights.h"
#include "model/layer_op.h"
#include "staged_upload.h"
#include "step/overlap_token.h"
#include "step/step_batch.h"
#include "step_attention_plans.h"
#include "step_profiler.h"

namespace pagedgen::gpu {

struct CudaBackend::Impl {
  const ModelConfig& config;
  CudaBackendOptions options;
  cudaStream_t stream = nullptr;
  std::optional<DeviceWeights> weights;
  std::optional<CudaGemm> gemm;
  DeviceKvPools kv_pools;
  std::optional<ActivationWorkspace> activations;  // allocated after the weights
  StagedUpload step_uploads;                       // each step's arrays, and block copy lists
  DeviceSampler sampler;
  // Decode steps (decode_graphs.h): their token rows, padded to the bucket, at addresses
  // the graphs keep; and the graphs.
  DecodeRows decode_rows;
  DecodeGraphs graphs;
  int32_t num_in_flight = 0;             // steps submitted, not collected
  std::optional<StepProfiler> profiler;  // with PAGEDGEN_GPU_PROFILE=1 only

  // The forward pass (model/layer_program.h) and what its Attention ops ask: the graph
  // segments of a decode step are the ops between them (decode_graphs.h).
  std::vector<LayerOp> program;
  ProgramAttention attention;

  Impl(const ModelConfig& c, const CudaBackendOptions& o);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // The activation workspace, for options.max_batch_tokens and max_logits_rows (once the
  // weights are on the device, so that the KV pool is sized from what is left).
  void allocate_activations();
  // Device memory beside the weights and the KV pools: activations, GEMM workspace, uploads.
  std::size_t activation_bytes() const;

  // Checks the batch, then queues its forward pass on `stream` (cuda_forward.cpp): the
  // logits of batch.logits_rows end up in activations->buffers().logits (rows, vocab).
  // `overlap_tokens` input tokens are read from the ids the sampler gave last.
  void queue_forward(const StepBatch& batch, std::size_t logits_size, std::span<const OverlapToken> overlap_tokens);
  // A decode step: one new token per sequence, each sampled, no more sequences than the
  // largest bucket. It runs padded to its bucket (with graphs on or off, so that both run
  // the same GEMM shapes and give the same bits).
  bool is_decode_step(const StepBatch& batch) const;
  // The forward pass of a checked batch of at least one token.
  void forward(const StepBatch& batch, std::span<const OverlapToken> overlap_tokens);
  // The program on `ops`, in graph segments for a decode step of `bucket` rows.
  void run_program(LayerOps& ops, bool decode, int32_t bucket);

  // Runs `queue` (launches on the stream) as one piece of the step being profiled.
  template <typename F>
  void profiled(ProfiledPiece kind, F&& queue) {
    if (profiler) profiler->begin_piece(kind);
    queue();
    if (profiler) profiler->end_piece();
  }
};

}  // namespace pagedgen::gpu
