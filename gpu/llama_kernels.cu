#include "llama_kernels.h"

#include "cuda_check.h"
#include "dtype_traits.cuh"
#include "gated_activation.cuh"
#include "kv_write.cuh"

namespace pagedgen::gpu {

namespace {

constexpr int kRowThreads = 256;

template <typename T>
__global__ void embedding_gather_kernel(EmbeddingArgs<T> args) {
  const int64_t t = blockIdx.x;
  const T* src = args.table + static_cast<int64_t>(args.ids[t]) * args.hidden;
  float* dst = args.out + t * args.hidden;
  for (int i = threadIdx.x; i < args.hidden; i += blockDim.x) dst[i] = to_float(src[i]) * args.scale;
}

// Sum over the block in a fixed tree: warps by shuffles (offsets 16..1), then warp 0 over
// the warp sums in warp order. Every thread gets the total; a block may call it again.
__device__ double block_sum(double value) {
  __shared__ double warp_sums[kRowThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) warp_sums[warp] = value;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < kRowThreads / 32; ++w) total += warp_sums[w];
  __syncthreads();  // every thread has read warp_sums before a next call writes it
  return total;
}

// 1 / sqrt(mean of squares + eps) from a sum of squares, as cpu::rms_norm rounds it.
__device__ float rms_scale(double sum_sq, int dim, float eps) {
  return static_cast<float>(1.0 / sqrt(sum_sq / static_cast<double>(dim) + eps));
}

template <typename T>
__global__ void __launch_bounds__(kRowThreads) add_rms_norm_kernel(RmsNormArgs<T> args) {
  const int64_t r = blockIdx.x;
  const int64_t i = args.rows != nullptr ? args.rows[r] : r;
  float* x = args.x + i * args.dim;
  const float* residual = args.residual != nullptr ? args.residual + i * args.dim : nullptr;
  // A post-normed residual: its own scale first.
  float residual_scale = 1.0f;
  if (residual != nullptr && args.residual_norm != nullptr) {
    double residual_sq = 0.0;
    for (int d = threadIdx.x; d < args.dim; d += kRowThreads)
      residual_sq += static_cast<double>(residual[d]) * residual[d];
    residual_scale = rms_scale(block_sum(residual_sq), args.dim, args.eps);
  }
  double sum_sq = 0.0;
  for (int d = threadIdx.x; d < args.dim; d += kRowThreads) {
    float value = x[d];
    if (residual != nullptr) {
      // The normed residual is rounded before the add, as on the CPU (no fused multiply-add).
      value +=
          args.residual_norm != nullptr ? __fmul_rn(residual[d] * residual_scale, args.residual_norm[d]) : residual[d];
      x[d] = value;
    }
    sum_sq += static_cast<double>(value) * value;
  }
  const float scale = rms_scale(block_sum(sum_sq), args.dim, args.eps);
  T* out = args.out + r * args.dim;
  for (int d = threadIdx.x; d < args.dim; d += kRowThreads) out[d] = from_float<T>(x[d] * scale * args.weight[d]);
}

constexpr int kMaxRopePairs = 256;  // head_dim <= 512

// The RMSNorm scale of each head of one token's q (heads [0, num_heads)) and k (the next
// num_kv_heads) from `row` (+ bias), into head_scale: warp w takes heads w, w + warps, ...
__device__ void qk_head_scales(const float* row, const float* bias, int num_heads, int num_kv_heads, int head_dim,
                               float eps, float* head_scale) {
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  for (int h = warp; h < num_heads + num_kv_heads; h += blockDim.x / 32) {
    double sum_sq = 0.0;
    for (int d = lane; d < head_dim; d += 32) {
      const int i = h * head_dim + d;
      const float value = bias != nullptr ? row[i] + bias[i] : row[i];
      sum_sq += static_cast<double>(value) * value;
    }
    for (int offset = 16; offset > 0; offset /= 2) sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
    if (lane == 0) head_scale[h] = rms_scale(sum_sq, head_dim, eps);
  }
}

// Rotates (or copies) the heads [0, num_heads) of one token from `src` (+ bias) into `dst`,
// each first normed with its head_scale and `norm` when norm is not null.
// Pair slot p < rope_dim/2 rotates its pair; slots past it copy two unrotated dimensions.
__device__ void rope_heads(const float* src, const float* bias, const float* norm, const float* head_scale, float* dst,
                           int num_heads, int head_dim, int rope_dim, RopeLayout layout, const float* cos_s,
                           const float* sin_s) {
  const int half_head = head_dim / 2;
  const int num_pairs = rope_dim / 2;
  for (int idx = threadIdx.x; idx < num_heads * half_head; idx += blockDim.x) {
    const int h = idx / half_head;
    const int p = idx % half_head;
    int i0, i1;
    if (p >= num_pairs) {
      i0 = rope_dim + 2 * (p - num_pairs);
      i1 = i0 + 1;
    } else if (layout == RopeLayout::Interleaved) {
      i0 = 2 * p;
      i1 = 2 * p + 1;
    } else {
      i0 = p;
      i1 = p + num_pairs;
    }
    const int base = h * head_dim;
    float a = src[base + i0];
    float b = src[base + i1];
    if (bias != nullptr) {
      a += bias[base + i0];
      b += bias[base + i1];
    }
    if (norm != nullptr) {  // as cpu::rms_norm: (value * scale) * weight
      a = a * head_scale[h] * norm[i0];
      b = b * head_scale[h] * norm[i1];
    }
    if (p < num_pairs) {
      const float c = cos_s[p];
      const float s = sin_s[p];
      // a * c - b * s and a * s + b * c, each product rounded, as on the CPU.
      dst[base + i0] = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
      dst[base + i1] = __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c));
    } else {
      dst[base + i0] = a;
      dst[base + i1] = b;
    }
  }
}

// kWriteKv: then the token's k and v rows into the pools (kv_write.k, .v are args.k, .v).
// Dynamic shared memory: the q and k heads' norm scales (num_heads + num_kv_heads floats)
// when there are q/k norms.
template <typename Kv, bool kWriteKv>
__global__ void qkv_rope_kernel(QkvRopeArgs args, KvWriteArgsOf<Kv> kv_write) {
  __shared__ float cos_s[kMaxRopePairs];
  __shared__ float sin_s[kMaxRopePairs];
  extern __shared__ float head_scale[];
  const int64_t t = blockIdx.x;
  const int q_dim = args.num_heads * args.head_dim;
  const int kv_dim = args.num_kv_heads * args.head_dim;
  const float* row = args.qkv + t * (q_dim + 2 * kv_dim);
  const double position = args.positions[t];
  for (int p = threadIdx.x; p < args.rope_dim / 2; p += blockDim.x) {
    double s, c;
    sincos(position * static_cast<double>(args.inv_freq[p]), &s, &c);
    cos_s[p] = static_cast<float>(c);
    sin_s[p] = static_cast<float>(s);
  }
  const float* bias = args.bias;
  if (args.q_norm != nullptr)
    qk_head_scales(row, bias, args.num_heads, args.num_kv_heads, args.head_dim, args.eps, head_scale);
  __syncthreads();
  rope_heads(row, bias, args.q_norm, head_scale, args.q + t * q_dim, args.num_heads, args.head_dim, args.rope_dim,
             args.layout, cos_s, sin_s);
  rope_heads(row + q_dim, bias != nullptr ? bias + q_dim : nullptr, args.k_norm, head_scale + args.num_heads,
             args.k + t * kv_dim, args.num_kv_heads, args.head_dim, args.rope_dim, args.layout, cos_s, sin_s);
  const float* v_src = row + q_dim + kv_dim;
  float* v_dst = args.v + t * kv_dim;
  for (int i = threadIdx.x; i < kv_dim; i += blockDim.x)
    v_dst[i] = bias != nullptr ? v_src[i] + bias[q_dim + kv_dim + i] : v_src[i];
  if constexpr (kWriteKv) {
    __syncthreads();  // the block's k and v rows, written above, are read back by other threads
    write_kv_row(kv_write, t);
  }
}

template <typename T>
__global__ void gated_activation_kernel(GatedActivationArgs<T> args) {
  const int64_t n = static_cast<int64_t>(args.num_tokens) * args.ffn;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / args.ffn;
    const int64_t j = i % args.ffn;
    const float gate = args.gate_up[t * 2 * args.ffn + j];
    const float up = args.gate_up[t * 2 * args.ffn + args.ffn + j];
    args.out[i] = from_float<T>(gated(args.activation, gate, up));
  }
}

__global__ void soft_cap_kernel(float* x, int64_t n, float cap) {
  const float inv_cap = 1.0f / cap;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    x[i] = cap * tanhf(x[i] * inv_cap);
}

unsigned grid_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

// The dynamic shared memory of qkv_rope_kernel.
std::size_t qkv_rope_shared_bytes(const QkvRopeArgs& args) {
  return args.q_norm != nullptr ? static_cast<std::size_t>(args.num_heads + args.num_kv_heads) * sizeof(float) : 0;
}

}  // namespace

template <typename T>
void launch_embedding_gather(const EmbeddingArgs<T>& args, cudaStream_t stream) {
  if (args.num_tokens == 0) return;
  embedding_gather_kernel<T><<<args.num_tokens, 256, 0, stream>>>(args);
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_add_rms_norm(const RmsNormArgs<T>& args, cudaStream_t stream) {
  if (args.num_rows == 0) return;
  add_rms_norm_kernel<T><<<args.num_rows, kRowThreads, 0, stream>>>(args);
  CUDA_CHECK(cudaGetLastError());
}

void launch_qkv_rope(const QkvRopeArgs& args, cudaStream_t stream) {
  if (args.num_tokens == 0) return;
  qkv_rope_kernel<float, false>
      <<<args.num_tokens, 128, qkv_rope_shared_bytes(args), stream>>>(args, KvWriteArgsOf<float>{});
  CUDA_CHECK(cudaGetLastError());
}

template <typename Kv>
void launch_qkv_rope(const QkvRopeArgs& args, const KvWriteArgsOf<Kv>& kv_write, cudaStream_t stream) {
  if (args.num_tokens == 0) return;
  if (kv_write.k != args.k || kv_write.v != args.v || kv_write.num_tokens != args.num_tokens)
    throw_cuda_error(cudaErrorInvalidValue, "launch_qkv_rope: the KV write must read the rotated k and v", __FILE__,
                     __LINE__);
  qkv_rope_kernel<Kv, true><<<args.num_tokens, 128, qkv_rope_shared_bytes(args), stream>>>(args, kv_write);
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_gated_activation(const GatedActivationArgs<T>& args, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(args.num_tokens) * args.ffn;
  if (n == 0) return;
  gated_activation_kernel<T><<<grid_for(n, 256), 256, 0, stream>>>(args);
  CUDA_CHECK(cudaGetLastError());
}

void launch_soft_cap(float* x, int64_t n, float cap, cudaStream_t stream) {
  if (n == 0) return;
  soft_cap_kernel<<<grid_for(n, 256), 256, 0, stream>>>(x, n, cap);
  CUDA_CHECK(cudaGetLastError());
}

#define PG_INSTANTIATE(T)                                                                \
  template void launch_embedding_gather<T>(const EmbeddingArgs<T>&, cudaStream_t);       \
  template void launch_add_rms_norm<T>(const RmsNormArgs<T>&, cudaStream_t);             \
  template void launch_gated_activation<T>(const GatedActivationArgs<T>&, cudaStream_t); \
  template void launch_qkv_rope<T>(const QkvRopeArgs&, const KvWriteArgsOf<T>&, cudaStream_t);
PG_INSTANTIATE(float)
PG_INSTANTIATE(__half)
PG_INSTANTIATE(__nv_bfloat16)
#undef PG_INSTANTIATE

}  // namespace pagedgen::gpu
