#include "tensor_attention_kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attention_merge.cuh"
#include "cuda_check.h"
#include "dtype_traits.cuh"

namespace pagedgen::gpu {

namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
static_assert(kWarps * 16 == kTensorTileRows, "each warp takes 16 rows of a tile");
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// KV positions per shared-memory tile: K and V tiles of (kv_tile, head_dim + 8) elements
// stay under 48 KiB; the 8-element pad staggers rows across the banks.
template <int kHeadDim>
inline constexpr int kKvTile = kHeadDim <= 128 ? 64 : 32;

// Two floats as one register of two KV-type elements, `lo` in the low half.
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  const __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// Two 16-bit elements of shared memory as one register, `lo` in the low half.
template <typename T>
__device__ __forceinline__ uint32_t pack2_raw(const T& lo, const T& hi) {
  return static_cast<uint32_t>(*reinterpret_cast<const uint16_t*>(&lo)) |
         (static_cast<uint32_t>(*reinterpret_cast<const uint16_t*>(&hi)) << 16);
}

// d += a b for one m16n8k16 tile: a (16 x 16, row-major fragment), b (16 x 8, column
// fragment), d (16 x 8 float32). Lane l holds rows l / 4 and l / 4 + 8, columns 2 (l % 4)
// and 2 (l % 4) + 1 of d (the PTX fragment layouts).
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma_16816<__half>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The (token, head) of tile row r, r = warp * 16 + lane / 4 (+ 8): token slot r / group of
// the tile, query head kv_head * group + r % group. `limit` is the last position it reads
// (-1 for a row past the tile's tokens).
struct TileRow {
  int64_t token;
  int64_t head;
  int32_t limit;
};

__device__ __forceinline__ TileRow tile_row(const TensorAttentionTile& tile, const int32_t* tile_tokens,
                                            const int32_t* positions, int group, int kv_head, int r) {
  const int slot = r / group;
  if (slot >= tile.num_tokens) return TileRow{0, 0, -1};
  const int32_t token = tile_tokens[tile.token_begin + slot];
  return TileRow{token, kv_head * group + r % group, min(tile.kv_end - 1, positions[token])};
}

template <typename T, int kHeadDim>
__global__ void __launch_bounds__(kThreads)
    tensor_attention_kernel(PagedAttentionArgsOf<T, T> args, TensorAttentionWork work) {
  constexpr int kKv = kKvTile<kHeadDim>;
  constexpr int kStride = kHeadDim + 8;     // shared-memory row, elements
  constexpr int kVecs = kHeadDim * 2 / 16;  // 16-byte vectors per K or V row
  constexpr int kSteps = kHeadDim / 16;     // k-steps of Q K^T
  constexpr int kScoreTiles = kKv / 8;      // n-tiles of S
  constexpr int kOutTiles = kHeadDim / 8;   // n-tiles of O
  __shared__ alignas(16) unsigned char smem[2 * kKv * kStride * sizeof(T)];
  T* k_s = reinterpret_cast<T*>(smem);  // (kKv, kStride)
  T* v_s = k_s + kKv * kStride;         // (kKv, kStride)

  const TensorAttentionTile tile = work.tiles[blockIdx.x];
  const int kv_head = blockIdx.y;
  const KvLayout layout = args.layout;
  const int group = args.num_heads / static_cast<int>(layout.num_kv_heads);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int g = lane / 4;  // fragment row (and row + 8)
  const int t = lane % 4;  // fragment column pair
  const TileRow row0 = tile_row(tile, work.tile_tokens, args.positions, group, kv_head, warp * 16 + g);
  const TileRow row1 = tile_row(tile, work.tile_tokens, args.positions, group, kv_head, warp * 16 + g + 8);
  const bool warp_active = __any_sync(0xffffffffu, row0.limit >= 0 || row1.limit >= 0);

  // Q fragments, scaled to log2 units in float32 before rounding to T: rows without a token
  // are zeros (and fully masked below).
  const float q_scale = args.scale * kLog2e;
  uint32_t qf[kSteps][4];
  {
    const float* q0 = args.q + (row0.token * args.num_heads + row0.head) * kHeadDim;
    const float* q1 = args.q + (row1.token * args.num_heads + row1.head) * kHeadDim;
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) {
      const int c = ks * 16 + 2 * t;
      const float2 a = row0.limit >= 0 ? *reinterpret_cast<const float2*>(q0 + c) : float2{0.0f, 0.0f};
      const float2 b = row1.limit >= 0 ? *reinterpret_cast<const float2*>(q1 + c) : float2{0.0f, 0.0f};
      const float2 e = row0.limit >= 0 ? *reinterpret_cast<const float2*>(q0 + c + 8) : float2{0.0f, 0.0f};
      const float2 f = row1.limit >= 0 ? *reinterpret_cast<const float2*>(q1 + c + 8) : float2{0.0f, 0.0f};
      qf[ks][0] = pack2<T>(a.x * q_scale, a.y * q_scale);
      qf[ks][1] = pack2<T>(b.x * q_scale, b.y * q_scale);
      qf[ks][2] = pack2<T>(e.x * q_scale, e.y * q_scale);
      qf[ks][3] = pack2<T>(f.x * q_scale, f.y * q_scale);
    }
  }

  float o[kOutTiles][4];
#pragma unroll
  for (int n = 0; n < kOutTiles; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m0 = -INFINITY, m1 = -INFINITY;  // running max of rows g and g + 8 (log2 units)
  float l0 = 0.0f, l1 = 0.0f;            // this lane's share of their exp sums
  const int32_t* table = args.block_tables + static_cast<int64_t>(tile.seq) * args.max_blocks_per_seq;

  for (int32_t j0 = tile.kv_begin; j0 < tile.kv_end; j0 += kKv) {
    for (int i = threadIdx.x; i < kKv * kVecs; i += kThreads) {
      const int r = i / kVecs;
      const int c = i % kVecs;
      const int32_t pos = j0 + r;
      uint4 kx = make_uint4(0, 0, 0, 0), vx = make_uint4(0, 0, 0, 0);
      if (pos < tile.kv_end) {
        const KvSlot slot = position_slot(table, pos, layout.block_size);
        const int64_t at = layout.offset(slot.block_id, kv_head, slot.slot_in_block, 0);
        kx = reinterpret_cast<const uint4*>(args.k_pool + at)[c];
        vx = reinterpret_cast<const uint4*>(args.v_pool + at)[c];
      }
      reinterpret_cast<uint4*>(k_s + r * kStride)[c] = kx;
      reinterpret_cast<uint4*>(v_s + r * kStride)[c] = vx;
    }
    __syncthreads();
    if (warp_active) {
      // S = Q K^T: B[k][n] = K[position n][dim k], so a lane's pair is two adjacent dims.
      float s[kScoreTiles][4];
#pragma unroll
      for (int n = 0; n < kScoreTiles; ++n) {
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
        const T* k_row = k_s + (n * 8 + g) * kStride + 2 * t;
#pragma unroll
        for (int ks = 0; ks < kSteps; ++ks)
          mma_16816<T>(s[n], qf[ks], *reinterpret_cast<const uint32_t*>(k_row + ks * 16),
                       *reinterpret_cast<const uint32_t*>(k_row + ks * 16 + 8));
      }
      // Causal mask, the tile's row max, the running max and the rescale of what came before.
      float tile_m0 = -INFINITY, tile_m1 = -INFINITY;
#pragma unroll
      for (int n = 0; n < kScoreTiles; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int32_t pos = j0 + n * 8 + 2 * t + e;
          s[n][e] = pos <= row0.limit ? s[n][e] : -INFINITY;
          s[n][2 + e] = pos <= row1.limit ? s[n][2 + e] : -INFINITY;
          tile_m0 = fmaxf(tile_m0, s[n][e]);
          tile_m1 = fmaxf(tile_m1, s[n][2 + e]);
        }
#pragma unroll
      for (int offset = 1; offset < 4; offset *= 2) {
        tile_m0 = fmaxf(tile_m0, __shfl_xor_sync(0xffffffffu, tile_m0, offset));
        tile_m1 = fmaxf(tile_m1, __shfl_xor_sync(0xffffffffu, tile_m1, offset));
      }
      const float new_m0 = fmaxf(m0, tile_m0), new_m1 = fmaxf(m1, tile_m1);
      const float shift0 = new_m0 == -INFINITY ? 0.0f : new_m0;  // a row that has seen no position yet
      const float shift1 = new_m1 == -INFINITY ? 0.0f : new_m1;
      const float alpha0 = exp2f(m0 - shift0), alpha1 = exp2f(m1 - shift1);
      m0 = new_m0;
      m1 = new_m1;
      l0 *= alpha0;
      l1 *= alpha1;
#pragma unroll
      for (int n = 0; n < kOutTiles; ++n) {
        o[n][0] *= alpha0;
        o[n][1] *= alpha0;
        o[n][2] *= alpha1;
        o[n][3] *= alpha1;
      }
#pragma unroll
      for (int n = 0; n < kScoreTiles; ++n) {
        s[n][0] = exp2f(s[n][0] - shift0);
        s[n][1] = exp2f(s[n][1] - shift0);
        s[n][2] = exp2f(s[n][2] - shift1);
        s[n][3] = exp2f(s[n][3] - shift1);
        l0 += s[n][0] + s[n][1];
        l1 += s[n][2] + s[n][3];
      }
      // O += P V: P's accumulator layout over two n-tiles is the A fragment of one k-step;
      // B[k][n] = V[position k][dim n], a lane's pair is two adjacent positions.
#pragma unroll
      for (int kk = 0; kk < kKv / 16; ++kk) {
        const uint32_t a[4] = {pack2<T>(s[2 * kk][0], s[2 * kk][1]), pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                               pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                               pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
        const T* v_rows = v_s + (kk * 16 + 2 * t) * kStride + g;
#pragma unroll
        for (int n = 0; n < kOutTiles; ++n) {
          const T* v = v_rows + n * 8;
          mma_16816<T>(o[n], a, pack2_raw(v[0], v[kStride]), pack2_raw(v[8 * kStride], v[9 * kStride]));
        }
      }
    }
    __syncthreads();
  }

  // The rows' exp sums over the 4 lanes that share them, then the output or the partial.
#pragma unroll
  for (int offset = 1; offset < 4; offset *= 2) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, offset);
    l1 += __shfl_xor_sync(0xffffffffu, l1, offset);
  }
  // Row g's values are o[n][0..1], row g + 8's o[n][2..3].
  const auto write_row = [&]<int kHalf>(const TileRow& row, float row_max, float row_sum) {
    if (row.limit < 0) return;
    if (work.num_parts[row.token] == 1) {
      T* out = args.out + (row.token * args.num_heads + row.head) * kHeadDim;
      const float inv = 1.0f / row_sum;
#pragma unroll
      for (int n = 0; n < kOutTiles; ++n)
        *reinterpret_cast<uint32_t*>(out + n * 8 + 2 * t) = pack2<T>(o[n][2 * kHalf] * inv, o[n][2 * kHalf + 1] * inv);
    } else {
      const int64_t partial =
          static_cast<int64_t>(work.partial_index[row.token] + tile.part) * args.num_heads + row.head;
      float* out = work.partial_out + partial * kHeadDim;
#pragma unroll
      for (int n = 0; n < kOutTiles; ++n)
        *reinterpret_cast<float2*>(out + n * 8 + 2 * t) = float2{o[n][2 * kHalf], o[n][2 * kHalf + 1]};
      if (t == 0) {
        work.partial_max[partial] = row_max * kLn2;  // natural-log units, as the merge reads them
        work.partial_sum[partial] = row_sum;
      }
    }
  };
  write_row.template operator()<0>(row0, m0, l0);
  write_row.template operator()<1>(row1, m1, l1);
}

// Block (token, head): the parts of a token that has more than one, in part order.
template <typename T, int kHeadDim>
__global__ void __launch_bounds__(kThreads)
    merge_parts_kernel(PagedAttentionArgsOf<T, T> args, TensorAttentionWork work) {
  const int64_t token = blockIdx.x;
  const int64_t head = blockIdx.y;
  const int32_t parts = work.num_parts[token];
  if (parts == 1) return;
  const int64_t first = static_cast<int64_t>(work.partial_index[token]) * args.num_heads + head;
  merge_attention_parts<T, kHeadDim>(work.partial_out, work.partial_max, work.partial_sum, first, parts, args.num_heads,
                                     args.out + (token * args.num_heads + head) * kHeadDim);
}

template <typename T, int kHeadDim>
void launch_for_head_dim(const PagedAttentionArgsOf<T, T>& args, const TensorAttentionWork& work, cudaStream_t stream) {
  if (work.num_tiles > 0) {
    const dim3 grid(static_cast<unsigned>(work.num_tiles), static_cast<unsigned>(args.layout.num_kv_heads));
    tensor_attention_kernel<T, kHeadDim><<<grid, kThreads, 0, stream>>>(args, work);
    CUDA_CHECK(cudaGetLastError());
  }
  if (work.num_partials > 0 && args.num_tokens > 0) {
    const dim3 grid(static_cast<unsigned>(args.num_tokens), static_cast<unsigned>(args.num_heads));
    merge_parts_kernel<T, kHeadDim><<<grid, kThreads, 0, stream>>>(args, work);
    CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace

template <typename Kv>
void launch_tensor_attention(const PagedAttentionArgsOf<Kv, Kv>& args, const TensorAttentionWork& work,
                             cudaStream_t stream) {
  if (args.window != 0 || args.softcap != 0.0f)
    throw_cuda_error(cudaErrorInvalidValue,
                     "launch_tensor_attention: sliding windows and soft-caps run on the "
                     "CUDA-core kernel (paged_attention_kernel.h)",
                     __FILE__, __LINE__);
  if (args.num_heads / args.layout.num_kv_heads > kTensorTileRows)
    throw_cuda_error(cudaErrorInvalidValue, "launch_tensor_attention: more query heads per KV head than tile rows",
                     __FILE__, __LINE__);
  switch (args.layout.head_dim) {
    case 64:
      launch_for_head_dim<Kv, 64>(args, work, stream);
      break;
    case 128:
      launch_for_head_dim<Kv, 128>(args, work, stream);
      break;
    case 256:
      launch_for_head_dim<Kv, 256>(args, work, stream);
      break;
    default:
      throw_cuda_error(cudaErrorInvalidValue, "launch_tensor_attention: unsupported head_dim", __FILE__, __LINE__);
  }
}

template void launch_tensor_attention<__half>(const PagedAttentionArgsOf<__half, __half>&, const TensorAttentionWork&,
                                              cudaStream_t);
template void launch_tensor_attention<__nv_bfloat16>(const PagedAttentionArgsOf<__nv_bfloat16, __nv_bfloat16>&,
                                                     const TensorAttentionWork&, cudaStream_t);

}  // namespace pagedgen::gpu
