#include "sampling_kernels.h"

#include "cuda_check.h"
#include "sample/sampling_math.h"

namespace pagedgen::gpu {

namespace {

using namespace sampling;

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;

using Ull = unsigned long long;  // the type of CUDA's 64-bit atomics (uint64_t is unsigned long)

__device__ Ull* as_ull(uint64_t* p) { return reinterpret_cast<Ull*>(p); }

// Whether `id` is in the row's sorted masked ids (usually none: only before min_tokens, and
// what bad_words bans).
__device__ bool is_masked(int32_t id, const int32_t* masked, int32_t num_masked) {
  int32_t lo = 0;
  int32_t hi = num_masked;
  while (lo < hi) {
    const int32_t mid = (lo + hi) / 2;
    if (masked[mid] < id) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < num_masked && masked[lo] == id;
}

// What a row may not pick (the Sampler's step 1): its masked ids (min_tokens, bad_words)
// and, with a grammar or allowed_token_ids, every id outside its allowed-token mask.
struct RowMask {
  const int32_t* masked;  // [num_masked] sorted
  int32_t num_masked;
  const uint32_t* allowed;  // [token_mask_words(vocab)] the grammar's mask; nullptr: no grammar

  __device__ bool excludes(int32_t id) const {
    if (allowed != nullptr && ((allowed[id / 32] >> (id % 32)) & 1u) == 0) return true;
    return num_masked > 0 && is_masked(id, masked, num_masked);
  }
};

// The best unmasked logit above -inf, lowest id on ties; id -1 when there is none.
struct Best {
  float value;
  int32_t id;
};

__device__ bool better(const Best& a, const Best& b) {
  return a.id >= 0 && (b.id < 0 || a.value > b.value || (a.value == b.value && a.id < b.id));
}

struct SharedState {
  DigitHistogram top;    // every candidate by the top digit, kept for the whole row
  DigitHistogram level;  // the histogram of the descent's current level
  Best warp_best[kWarps];
  Best best;
  Ull sum;
};

// The Row of radix_select.h for one thread block: histograms filled by all its threads
// with shared-memory atomics (exact integer sums, so the order does not matter). Weights
// are recomputed from the logits on every pass, not stored: a pass reads 4 bytes per token
// and computes the exp only of tokens whose exponent can reach the level's keys.
class BlockRow {
 public:
  __device__ BlockRow(const float* logits, int32_t vocab, const RowMask& mask, float max_logit,
                      double inverse_temperature, SharedState& shared)
      : logits_(logits),
        vocab_(vocab),
        mask_(mask),
        max_logit_(max_logit),
        inverse_temperature_(inverse_temperature),
        shared_(shared) {
    fill(shared_.top, 0, kTopShift);
  }

  __device__ const DigitHistogram& top_histogram() const { return shared_.top; }

  __device__ const DigitHistogram& histogram(uint64_t prefix, int shift) {
    fill(shared_.level, prefix, shift);
    return shared_.level;
  }

  __device__ uint64_t mass_at_least(uint64_t least_key) {
    __syncthreads();  // every thread has read the last sum
    if (threadIdx.x == 0) shared_.sum = 0;
    __syncthreads();
    const ExponentWindow window = ExponentWindow::of_keys(least_key, ~uint64_t{0});
    uint64_t mass = 0;
    for (int32_t i = threadIdx.x; i < vocab_; i += kThreads) {
      const uint64_t key = key_at(i, window);
      if (key >= least_key) mass += key_weight(key);
    }
    if (mass > 0) atomicAdd(&shared_.sum, static_cast<Ull>(mass));
    __syncthreads();
    return shared_.sum;
  }

 private:
  // Token i's sort key, or 0 when it is masked, weighs 0 or lies outside the window.
  __device__ uint64_t key_at(int32_t i, const ExponentWindow& window) const {
    if (mask_.excludes(i)) return 0;
    return key_in_window(weight_exponent(logits_[i], max_logit_, inverse_temperature_), i, window);
  }

  __device__ void fill(DigitHistogram& h, uint64_t prefix, int shift) {
    __syncthreads();  // every thread is done reading h
    for (int d = threadIdx.x; d < kNumDigits; d += kThreads) {
      h.count[d] = 0;
      h.mass[d] = 0;
      h.top_key[d] = 0;
    }
    __syncthreads();
    const ExponentWindow window = ExponentWindow::of_keys(prefix, prefix | low_bits(shift + kDigitBits));
    for (int32_t i = threadIdx.x; i < vocab_; i += kThreads) {
      const uint64_t key = key_at(i, window);
      if (key == 0 || !in_level(key, prefix, shift)) continue;
      const int d = digit_of(key, shift);
      atomicAdd(as_ull(&h.count[d]), Ull{1});
      atomicAdd(as_ull(&h.mass[d]), static_cast<Ull>(key_weight(key)));
      atomicMax(as_ull(&h.top_key[d]), static_cast<Ull>(key));
    }
    __syncthreads();
  }

  const float* logits_;
  int32_t vocab_;
  RowMask mask_;
  float max_logit_;
  double inverse_temperature_;
  SharedState& shared_;
};

// Every thread gets the row's best unmasked logit, or id -1 when the row is not usable (a
// NaN or +inf anywhere, masked or not, or no unmasked logit above -inf).
__device__ Best block_argmax(const float* logits, int32_t vocab, const RowMask& mask, SharedState& shared) {
  Best best{-INFINITY, -1};
  bool broken = false;
  for (int32_t i = threadIdx.x; i < vocab; i += kThreads) {
    const float value = logits[i];
    broken = broken || breaks_row(value);
    if (!(value > -INFINITY) || mask.excludes(i)) continue;
    if (best.id < 0 || value > best.value) best = {value, i};  // ids rise within a thread
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const Best other{__shfl_down_sync(0xffffffffu, best.value, offset), __shfl_down_sync(0xffffffffu, best.id, offset)};
    if (better(other, best)) best = other;
  }
  if (threadIdx.x % 32 == 0) shared.warp_best[threadIdx.x / 32] = best;
  broken = __syncthreads_or(broken);
  if (threadIdx.x == 0) {
    Best block = shared.warp_best[0];
    for (int w = 1; w < kWarps; ++w)
      if (better(shared.warp_best[w], block)) block = shared.warp_best[w];
    shared.best = block;
  }
  __syncthreads();
  return broken ? Best{-INFINITY, -1} : shared.best;
}

__global__ void __launch_bounds__(kThreads) sample_kernel(SamplingArgs args) {
  __shared__ SharedState shared;
  const DeviceSamplingRow row = args.rows[blockIdx.x];
  const float* logits = row.penalized_row >= 0 ? args.penalized + static_cast<int64_t>(row.penalized_row) * args.vocab
                                               : args.logits + static_cast<int64_t>(row.logits_row) * args.vocab;
  const RowMask mask{
      args.masked_ids + row.masked_begin, row.num_masked,
      row.mask_row >= 0 ? args.allowed_words + static_cast<int64_t>(row.mask_row) * args.mask_words : nullptr};
  const Best best = block_argmax(logits, args.vocab, mask, shared);
  int32_t token = best.id;  // -1 (not usable) or the greedy choice
  if (best.id >= 0 && row.temperature != 0.0) {
    BlockRow block_row(logits, args.vocab, mask, best.value, inverse_temperature(row.temperature), shared);
    token = draw_token(block_row, row.cuts);
  }
  if (threadIdx.x == 0) args.tokens[blockIdx.x] = token;
}

}  // namespace

void launch_sample(const SamplingArgs& args, cudaStream_t stream) {
  if (args.num_rows == 0) return;
  sample_kernel<<<args.num_rows, kThreads, 0, stream>>>(args);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedgen::gpu
