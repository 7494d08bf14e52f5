// A step's forward pass on the CUDA backend: its attention plans, its arrays uploaded, then
// the layer program (model/layer_program.h) run by the device layer ops, in segments
// between its Attention ops, which a decode step replays as CUDA graphs (decode_graphs.h):
//
//   segment 0       embedding, layer 0 up to attention      | attention 0 (eager)
//   segment l + 1   the rest of layer l, layer l + 1 up to  | attention l + 1 (eager)
//                   attention (for the last layer: the final norm and the LM head)
#include <algorithm>
#include <functional>
#include <variant>

#include "backend/step_batch_check.h"
#include "cuda_backend_impl.h"
#include "device_layer_ops.h"
#include "overlap_tokens_kernel.h"
#include "step_arrays.h"
#include "util/error.h"

namespace pagedgen::gpu {

void CudaBackend::Impl::queue_forward(const StepBatch& batch, std::size_t logits_size,
                                      std::span<const OverlapToken> overlap_tokens) {
  PG_CHECK(kv_pools.allocated(), "a step before allocate_kv_pool");
  check_step_batch(batch, kv_pools.shape().layouts(), config.vocab_size, logits_size);
  if (batch.num_tokens == 0) return;
  forward(batch, overlap_tokens);
}

bool CudaBackend::Impl::is_decode_step(const StepBatch& batch) const {
  return batch.num_tokens == batch.num_seqs && std::ssize(batch.logits_rows) == batch.num_tokens &&
         batch.num_tokens <= decode_bucket(std::max(1, options.max_logits_rows));
}

void CudaBackend::Impl::forward(const StepBatch& batch, std::span<const OverlapToken> overlap_tokens) {
  const int32_t n = batch.num_tokens;
  const auto num_logits = static_cast<int32_t>(batch.logits_rows.size());
  const bool decode = is_decode_step(batch);
  const int32_t bucket = decode ? decode_bucket(n) : 0;
  activations->ensure(static_cast<std::size_t>(decode ? bucket : n),
                      static_cast<std::size_t>(decode ? bucket : num_logits), stream);
  const StepAttentionPlans plans =
      plan_step_attention(batch, attention, config, options.dtype, activations->max_partials());
  const std::size_t num_kinds = kv_pools.shape().layouts().size();
  const StepArrayPack pack(batch, num_kinds, !decode, plans, overlap_tokens);
  // The first profiled piece: the uploads, the overlap tokens and segment 0.
  if (profiler) profiler->begin_piece(ProfiledPiece::kForward);
  StepArrays arrays = pack.upload(step_uploads, stream);
  if (decode) arrays.rows = decode_rows.upload(batch, bucket, num_kinds, stream);
  if (arrays.num_overlap_tokens > 0)
    launch_fill_overlap_tokens(OverlapTokenArgs{arrays.overlap_tokens, arrays.num_overlap_tokens,
                                                sampler.last_device_tokens(), arrays.rows.token_ids},
                               stream);
  const DeviceStep step{config, options.dtype, *weights,         *gemm, activations->buffers(), kv_pools, batch,
                        plans,  arrays.rows,   arrays.attention, stream};
  with_device_layer_ops(step, [&](LayerOps& ops) { run_program(ops, decode, bucket); });
}

void CudaBackend::Impl::run_program(LayerOps& ops, bool decode, int32_t bucket) {
  // Whenever an address a graph reads moves (KV pools, activations, decode rows), the sum grows.
  const uint64_t buffers = kv_pools.generation() + activations->generation() + decode_rows.device_generation();
  const auto segment = [&](int32_t index, const std::function<void()>& queue) {
    if (decode && options.cuda_graphs)
      graphs.run(bucket, index, buffers, stream, queue);
    else
      queue();
  };
  const std::span<const LayerOp> all(program);
  const std::vector<std::size_t>& at_attention = attention.op_indices;
  segment(0, [&] { run_layer_ops(all.first(at_attention.front()), ops); });
  if (profiler) profiler->end_piece();
  for (std::size_t i = 0; i < at_attention.size(); ++i) {
    const std::size_t at = at_attention[i];
    const std::size_t end = i + 1 < at_attention.size() ? at_attention[i + 1] : all.size();
    profiled(ProfiledPiece::kAttention, [&] { ops.run(std::get<Attention>(all[at])); });
    profiled(ProfiledPiece::kForward, [&] {
      segment(static_cast<int32_t>(i) + 1, [&] { run_layer_ops(all.subspan(at + 1, end - at - 1), ops); });
    });
  }
}

}  // namespace pagedgen::gpu
