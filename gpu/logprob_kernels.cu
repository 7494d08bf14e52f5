#include "logprob_kernels.h"

#include "cuda_check.h"
#include "sample/sampling_math.h"

namespace pagedgen::gpu {

namespace {

using namespace sampling;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxChunks = static_cast<int>(kMaxVocabSize / kLogSumChunk);

struct Ranked {
  float value;
  int32_t id;  // -1: none
};

// Higher logit first, lower id on ties (token_logprobs.cpp's order).
__device__ bool ranks_before(const Ranked& a, const Ranked& b) {
  return a.id >= 0 && (b.id < 0 || a.value > b.value || (a.value == b.value && a.id < b.id));
}

struct Shared {
  double chunk_sums[kMaxChunks];
  float warp_max[kWarps];
  int32_t warp_count[kWarps];
  Ranked warp_best[kWarps];
  int32_t top[kMaxTopLogprobs];
  float max_logit;
  double log_sum;
};

__device__ float block_max(const float* logits, int32_t vocab, Shared& shared) {
  float m = -INFINITY;
  for (int32_t i = threadIdx.x; i < vocab; i += kThreads) m = fmaxf(m, logits[i]);
  for (int offset = 16; offset > 0; offset /= 2) m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, offset));
  if (threadIdx.x % 32 == 0) shared.warp_max[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    float block = shared.warp_max[0];
    for (int w = 1; w < kWarps; ++w) block = fmaxf(block, shared.warp_max[w]);
    shared.max_logit = block;
  }
  __syncthreads();
  return shared.max_logit;
}

// The best id not among the first num_chosen of shared.top.
__device__ int32_t block_next_best(const float* logits, int32_t vocab, int num_chosen, Shared& shared) {
  Ranked best{-INFINITY, -1};
  for (int32_t i = threadIdx.x; i < vocab; i += kThreads) {
    bool taken = false;
    for (int j = 0; j < num_chosen; ++j) taken = taken || shared.top[j] == i;
    const Ranked candidate{logits[i], i};
    if (!taken && ranks_before(candidate, best)) best = candidate;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const Ranked other{__shfl_down_sync(0xffffffffu, best.value, offset),
                       __shfl_down_sync(0xffffffffu, best.id, offset)};
    if (ranks_before(other, best)) best = other;
  }
  if (threadIdx.x % 32 == 0) shared.warp_best[threadIdx.x / 32] = best;
  __syncthreads();
  if (threadIdx.x == 0) {
    Ranked block = shared.warp_best[0];
    for (int w = 1; w < kWarps; ++w)
      if (ranks_before(shared.warp_best[w], block)) block = shared.warp_best[w];
    shared.top[num_chosen] = block.id;
  }
  __syncthreads();
  return shared.top[num_chosen];
}

// Whether a thread of the block saw a NaN or +inf (the sampler's unusable row).
__device__ bool block_breaks_row(const float* logits, int32_t vocab) {
  bool broken = false;
  for (int32_t i = threadIdx.x; i < vocab; i += kThreads) broken = broken || breaks_row(logits[i]);
  return __syncthreads_or(broken) != 0;
}

// The ids whose logit is >= `logit`.
__device__ int32_t block_count_at_least(const float* logits, int32_t vocab, float logit, Shared& shared) {
  int32_t count = 0;
  for (int32_t i = threadIdx.x; i < vocab; i += kThreads) count += logits[i] >= logit ? 1 : 0;
  for (int offset = 16; offset > 0; offset /= 2) count += __shfl_down_sync(0xffffffffu, count, offset);
  if (threadIdx.x % 32 == 0) shared.warp_count[threadIdx.x / 32] = count;
  __syncthreads();
  int32_t block = 0;
  for (int w = 0; w < kWarps; ++w) block += shared.warp_count[w];
  return block;
}

__global__ void __launch_bounds__(kThreads) logprobs_kernel(LogprobArgs args) {
  __shared__ Shared shared;
  const DeviceLogprobRow row = args.rows[blockIdx.x];
  const bool prompt_row = row.prompt_token >= 0;
  const int32_t token = prompt_row ? row.prompt_token : args.tokens[row.sampling_row];
  if (token < 0) return;  // the whole block: the row had no token
  const float* logits = args.logits + static_cast<int64_t>(row.logits_row) * args.vocab;
  const bool broken = prompt_row && block_breaks_row(logits, args.vocab);
  const float max_logit = block_max(logits, args.vocab, shared);
  if (broken || max_logit == -INFINITY) {  // only a prompt row gets here unusable: the sampler gave no token
    if (threadIdx.x == 0) args.ranks[blockIdx.x] = 0;
    return;
  }
  const int32_t rank = block_count_at_least(logits, args.vocab, logits[token], shared);
  const int32_t num_chunks = (args.vocab + kLogSumChunk - 1) / kLogSumChunk;
  for (int32_t c = threadIdx.x; c < num_chunks; c += kThreads) {
    double chunk_sum = 0.0;
    const int32_t end = min(args.vocab, (c + 1) * kLogSumChunk);
    for (int32_t i = c * kLogSumChunk; i < end; ++i) chunk_sum = add_rn(chunk_sum, softmax_term(logits[i], max_logit));
    shared.chunk_sums[c] = chunk_sum;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double sum = 0.0;
    for (int32_t c = 0; c < num_chunks; ++c) sum = add_rn(sum, shared.chunk_sums[c]);
    shared.log_sum = log_of_sum(sum);
  }
  __syncthreads();
  const double log_sum = shared.log_sum;
  const int num_top = min(row.num_top, min(args.vocab, kMaxTopLogprobs));
  float* out = args.logprobs + static_cast<int64_t>(blockIdx.x) * (1 + kMaxTopLogprobs);
  int32_t* ids = args.top_ids + static_cast<int64_t>(blockIdx.x) * kMaxTopLogprobs;
  for (int j = 0; j < num_top; ++j) {
    const int32_t id = block_next_best(logits, args.vocab, j, shared);
    if (threadIdx.x == 0) {
      ids[j] = id;
      out[1 + j] = log_softmax(logits[id], max_logit, log_sum);
    }
  }
  if (threadIdx.x == 0) {
    out[0] = log_softmax(logits[token], max_logit, log_sum);
    args.ranks[blockIdx.x] = rank;
  }
}

}  // namespace

void launch_logprobs(const LogprobArgs& args, cudaStream_t stream) {
  if (args.num_rows == 0) return;
  logprobs_kernel<<<args.num_rows, kThreads, 0, stream>>>(args);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedgen::gpu
