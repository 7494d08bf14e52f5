#include "paged_attention_kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attention_merge.cuh"
#include "cuda_check.h"
#include "dtype_traits.cuh"

namespace pagedgen::gpu {

namespace {

constexpr int kThreads = 128;
constexpr int kPartition = kAttentionPartitionTokens;
constexpr int kRows = kAttentionMaxRows;

// The lane groups' output sums go through shared memory RowSplit::kPassRows rows at a time,
// so that their (kGroups, kPassRows, kHeadDim) floats stay within kAccFloats.
constexpr int kAccFloats = 8192;  // 32 KiB of the 48 KiB of static shared memory

// How a thread block reads a K or V row of kHeadDim elements: kLanes lanes take kElems
// consecutive elements each (a whole number of 16-byte vectors); kGroups lane groups take
// positions idx = group, group + kGroups, ... of the partition. kLanes is the largest power
// of two up to 32 that divides the row's vectors (96 floats: 24 vectors, 8 lanes of 12), so
// a row's lanes sit in one warp and a butterfly over them stays inside the row. All kRows
// rows' sums fit one pass for head dims 64, 128 and 256; 96 takes 5 rows a pass in float32,
// 2 in bfloat16 and float16.
template <typename Kv, int kHeadDim>
struct RowSplit {
  static constexpr int kVectorElems = 16 / static_cast<int>(sizeof(Kv));
  static constexpr int kVectors = kHeadDim / kVectorElems;
  static constexpr int kLanes = (kVectors & -kVectors) < 32 ? (kVectors & -kVectors) : 32;
  static constexpr int kElems = kHeadDim / kLanes;
  static constexpr int kGroups = kThreads / kLanes;
  static constexpr int kPassRows =
      kAccFloats / (kGroups * kHeadDim) < kRows ? kAccFloats / (kGroups * kHeadDim) : kRows;
  static_assert(kHeadDim % kVectorElems == 0, "rows are read in 16-byte vectors");
  static_assert(32 % kLanes == 0 && kElems % kVectorElems == 0, "a lane reads whole 16-byte vectors of one warp's row");
  static_assert(kPassRows >= 1, "one row of lane-group sums must fit the shared-memory budget");
  // Rows a lane group loads before it uses the first: each thread keeps that many rows'
  // 16-byte vectors in flight (raw, converted on use) to cover memory latency when few
  // blocks run (decode at small batch: one block per partition and KV head). Up to 8
  // vectors while scoring, 4 in the V sums, where the kRows x kElems sums are live too.
  static constexpr int kRowVectors = kElems / kVectorElems;
  static constexpr int kKeyRowsInFlight = kRowVectors >= 8 ? 1 : 8 / kRowVectors;
  static constexpr int kValueRowsInFlight = kRowVectors >= 4 ? 1 : 4 / kRowVectors;
};

// The first index >= begin that lane `lane` of `stride` lanes takes (lane, lane + stride, ...).
__device__ __forceinline__ int first_index_of_lane(int begin, int lane, int stride) {
  return begin + (lane - begin % stride + stride) % stride;
}

// A lane's slice of a K or V row, as loaded: kVectors 16-byte vectors of Kv.
template <int kVectors>
struct RowSlice {
  uint4 raw[kVectors];
};

template <int kVectors>
__device__ __forceinline__ RowSlice<kVectors> load_row_slice(const void* src) {
  RowSlice<kVectors> slice;
#pragma unroll
  for (int v = 0; v < kVectors; ++v) slice.raw[v] = reinterpret_cast<const uint4*>(src)[v];
  return slice;
}

// The slice as kVectors * 16 / sizeof(Kv) floats.
template <typename Kv, int kVectors>
__device__ __forceinline__ void unpack_slice(const RowSlice<kVectors>& slice,
                                             float (&out)[kVectors * 16 / sizeof(Kv)]) {
  constexpr int kPerVector = 16 / static_cast<int>(sizeof(Kv));
#pragma unroll
  for (int v = 0; v < kVectors; ++v)
    unpack_vector<Kv>(slice.raw[v], reinterpret_cast<float(&)[kPerVector]>(out[v * kPerVector]));
}

template <typename Kv, typename Out, int kHeadDim>
__global__ void __launch_bounds__(kThreads)
    paged_attention_kernel(PagedAttentionArgsOf<Kv, Out> args, AttentionWork work) {
  using Split = RowSplit<Kv, kHeadDim>;
  constexpr int kElems = Split::kElems;
  constexpr int kLanes = Split::kLanes;
  constexpr int kGroups = Split::kGroups;
  constexpr int kPassRows = Split::kPassRows;
  // Phase 1: queries (kRows, kHeadDim) and weights (kRows, kPartition); phase 2 reuses the
  // space for each lane group's partial output sums (kGroups, kPassRows, kHeadDim).
  constexpr int kPhase1 = kRows * kHeadDim + kRows * kPartition;
  constexpr int kPhase2 = kGroups * kPassRows * kHeadDim;
  __shared__ float smem[kPhase1 > kPhase2 ? kPhase1 : kPhase2];
  __shared__ float row_max_s[kRows];
  __shared__ float row_sum_s[kRows];
  __shared__ int32_t row_pos_s[kRows];    // the row's query position; -1 past num_rows
  __shared__ int32_t row_start_s[kRows];  // the first position of its window
  float* q_s = smem;
  float* w_s = smem + kRows * kHeadDim;
  float* acc_s = smem;

  const AttentionWorkItem item = work.items[blockIdx.x];
  const int kv_head = blockIdx.y;
  const KvLayout layout = args.layout;
  const int group = args.num_heads / static_cast<int>(layout.num_kv_heads);
  const int num_rows = item.num_queries * group;
  const int p0 = item.partition * kPartition;
  // The partition's positions p0 + idx that some row reads: idx in [idx_begin, num_pos).
  // Below the lowest window start nothing is loaded (those blocks may be given back).
  int32_t max_pos = 0;
  int32_t min_start = INT32_MAX;
  for (int qi = 0; qi < item.num_queries; ++qi) {
    const int32_t pos = args.positions[item.first_token + qi];
    max_pos = max(max_pos, pos);
    min_start = min(min_start, attention_window_start(pos, args.window));
  }
  const int num_pos = min(kPartition, max_pos + 1 - p0);
  const int idx_begin = max(0, min_start - p0);

  // Row r is query head kv_head * group + r % group of token first_token + r / group.
  for (int i = threadIdx.x; i < num_rows * kHeadDim; i += kThreads) {
    const int r = i / kHeadDim;
    const int64_t token = item.first_token + r / group;
    const int64_t head = kv_head * group + r % group;
    q_s[i] = args.q[(token * args.num_heads + head) * kHeadDim + i % kHeadDim];
  }
  if (threadIdx.x < kRows) {
    const int32_t pos = threadIdx.x < num_rows ? args.positions[item.first_token + threadIdx.x / group] : -1;
    row_pos_s[threadIdx.x] = pos;
    row_start_s[threadIdx.x] = attention_window_start(pos, args.window);
  }
  __syncthreads();

  const int lane_group = threadIdx.x / kLanes;
  const int lane = threadIdx.x % kLanes;
  const int32_t* table = args.block_tables + static_cast<int64_t>(item.seq) * args.max_blocks_per_seq;
  auto row_address = [&](const Kv* pool, int32_t position) {
    const KvSlot slot = position_slot(table, position, layout.block_size);
    return pool + layout.offset(slot.block_id, kv_head, slot.slot_in_block, lane * kElems);
  };

  // Scores: lane group g takes positions p0 + idx_begin + g, + kGroups, ...; each score is
  // the lane slices' products chained by fma, then summed across the kLanes lanes by a fixed
  // butterfly, then scaled and capped. Every lane runs every shuffle (the loop bound is the
  // block's).
  // A lane group loads its next Split::kKeyRowsInFlight rows (u = 0, 1, ...: positions
  // base + lane_group + u * kGroups) before scoring them; scores are independent, so this
  // changes no bits.
  const float softcap = args.softcap;
  constexpr int kKeyRows = Split::kKeyRowsInFlight;
  constexpr int kRowVectors = Split::kRowVectors;
  for (int base = idx_begin; base < num_pos; base += kGroups * kKeyRows) {
    RowSlice<kRowVectors> k[kKeyRows] = {};
#pragma unroll
    for (int u = 0; u < kKeyRows; ++u) {
      const int idx = base + lane_group + u * kGroups;
      if (idx < num_pos) k[u] = load_row_slice<kRowVectors>(row_address(args.k_pool, p0 + idx));
    }
#pragma unroll
    for (int u = 0; u < kKeyRows; ++u) {
      const int idx = base + lane_group + u * kGroups;
      const bool valid = idx < num_pos;
      float kf[kElems];
      unpack_slice<Kv>(k[u], kf);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (r >= num_rows) break;
        const float* q = q_s + r * kHeadDim + lane * kElems;
        float dot = __fmul_rn(q[0], kf[0]);
#pragma unroll
        for (int e = 1; e < kElems; ++e) dot = fmaf(q[e], kf[e], dot);
#pragma unroll
        for (int offset = kLanes / 2; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
        if (valid && lane == 0) {
          float score = dot * args.scale;
          if (softcap > 0.0f) score = softcap * tanhf(score / softcap);
          const bool visible = p0 + idx >= row_start_s[r] && p0 + idx <= row_pos_s[r];
          w_s[r * kPartition + idx] = visible ? score : -INFINITY;
        }
      }
    }
  }
  __syncthreads();

  // Softmax over the partition, row by row (warp w takes rows w, w + 4, ...): the max, then
  // weights exp(s - max) in place and their sum (lane l adds positions idx = l mod 32 in
  // increasing order; the lanes' sums by a butterfly). Positions below idx_begin would add
  // exp(-inf) = 0 to every row: skipping them gives the same bits.
  const int warp = threadIdx.x / 32;
  const int warp_lane = threadIdx.x % 32;
  const int softmax_begin = first_index_of_lane(idx_begin, warp_lane, 32);
  for (int r = warp; r < num_rows; r += kThreads / 32) {
    float m = -INFINITY;
    for (int idx = softmax_begin; idx < num_pos; idx += 32) m = fmaxf(m, w_s[r * kPartition + idx]);
    for (int offset = 16; offset > 0; offset /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
    const float shift = m == -INFINITY ? 0.0f : m;  // a row that reads nothing of this partition
    float sum = 0.0f;
    for (int idx = softmax_begin; idx < num_pos; idx += 32) {
      const float e = expf(w_s[r * kPartition + idx] - shift);
      w_s[r * kPartition + idx] = e;
      sum += e;
    }
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (warp_lane == 0) {
      row_max_s[r] = m;
      row_sum_s[r] = sum;
    }
  }
  __syncthreads();

  // Weighted V sums: lane group g adds its positions (idx = g mod kGroups) in increasing
  // order; those below idx_begin would add 0 * v, so they are neither loaded nor added.
  // Split::kValueRowsInFlight rows are loaded before the first is added, then added in
  // order: the same sums as one row at a time.
  constexpr int kValueRows = Split::kValueRowsInFlight;
  float acc[kRows][kElems] = {};
  for (int base = first_index_of_lane(idx_begin, lane_group, kGroups); base < num_pos; base += kGroups * kValueRows) {
    RowSlice<kRowVectors> v[kValueRows];
#pragma unroll
    for (int u = 0; u < kValueRows; ++u) {
      const int idx = base + u * kGroups;
      if (idx < num_pos) v[u] = load_row_slice<kRowVectors>(row_address(args.v_pool, p0 + idx));
    }
#pragma unroll
    for (int u = 0; u < kValueRows; ++u) {
      const int idx = base + u * kGroups;
      if (idx >= num_pos) break;
      float vf[kElems];
      unpack_slice<Kv>(v[u], vf);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (r >= num_rows) break;
        const float w = w_s[r * kPartition + idx];
#pragma unroll
        for (int e = 0; e < kElems; ++e) acc[r][e] = fmaf(w, vf[e], acc[r][e]);
      }
    }
  }

  // Rows [r0, r0 + kPassRows) at a time: the lane groups' sums in group order; then the
  // output (a token that reads one partition) or a partial. A row whose token does not
  // read this partition (before its window, or after its position) writes nothing.
  for (int r0 = 0; r0 < num_rows; r0 += kPassRows) {
    __syncthreads();  // q_s and w_s (first pass) or the last pass's sums are dead; acc_s takes their space
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (r >= num_rows) break;
      if (r < r0 || r >= r0 + kPassRows) continue;
#pragma unroll
      for (int e = 0; e < kElems; ++e)
        acc_s[(lane_group * kPassRows + r - r0) * kHeadDim + lane * kElems + e] = acc[r][e];
    }
    __syncthreads();
    const int pass_rows = min(kPassRows, num_rows - r0);
    for (int i = threadIdx.x; i < pass_rows * kHeadDim; i += kThreads) {
      const int pr = i / kHeadDim;
      const int r = r0 + pr;
      const int d = i % kHeadDim;
      const int32_t pos = row_pos_s[r];
      const int32_t first_partition = attention_first_partition(pos, args.window);
      const int32_t end_partition = attention_partitions(pos);
      if (item.partition < first_partition || item.partition >= end_partition) continue;
      float total = acc_s[pr * kHeadDim + d];
      for (int g = 1; g < kGroups; ++g) total += acc_s[(g * kPassRows + pr) * kHeadDim + d];
      const int64_t token = item.first_token + r / group;
      const int64_t head = kv_head * group + r % group;
      if (end_partition - first_partition == 1) {
        args.out[(token * args.num_heads + head) * kHeadDim + d] = from_float<Out>(total * (1.0f / row_sum_s[r]));
      } else {
        const int64_t partial =
            (static_cast<int64_t>(work.partial_index[token]) + item.partition - first_partition) * args.num_heads +
            head;
        work.partial_out[partial * kHeadDim + d] = total;
        if (d == 0) {
          work.partial_max[partial] = row_max_s[r];
          work.partial_sum[partial] = row_sum_s[r];
        }
      }
    }
  }
}

// Block (token, head): the partitions of a token that reads more than one, in order.
template <typename Out, int kHeadDim>
__global__ void __launch_bounds__(kThreads)
    combine_partitions_kernel(PagedAttentionArgsOf<float, Out> args, AttentionWork work) {
  const int64_t token = work.token_begin + blockIdx.x;
  const int64_t head = blockIdx.y;
  const int32_t position = args.positions[token];
  const int32_t parts = attention_partitions(position) - attention_first_partition(position, args.window);
  if (parts == 1) return;
  const int64_t first = static_cast<int64_t>(work.partial_index[token]) * args.num_heads + head;
  merge_attention_parts<Out, kHeadDim>(work.partial_out, work.partial_max, work.partial_sum, first, parts,
                                       args.num_heads, args.out + (token * args.num_heads + head) * kHeadDim);
}

template <typename Kv, typename Out, int kHeadDim>
void launch_for_head_dim(const PagedAttentionArgsOf<Kv, Out>& args, const AttentionWork& work, cudaStream_t stream) {
  if (work.num_items > 0) {
    const dim3 grid(static_cast<unsigned>(work.num_items), static_cast<unsigned>(args.layout.num_kv_heads));
    paged_attention_kernel<Kv, Out, kHeadDim><<<grid, kThreads, 0, stream>>>(args, work);
    CUDA_CHECK(cudaGetLastError());
  }
  if (work.token_end > work.token_begin) {
    // The combine reads only positions, heads and partials: the pools are not passed.
    const PagedAttentionArgsOf<float, Out> combine{
        nullptr,           nullptr,           nullptr,         args.out,      args.positions,          args.query_start,
        args.context_lens, args.block_tables, args.num_tokens, args.num_seqs, args.max_blocks_per_seq, args.num_heads,
        args.scale,        args.layout,       args.window,     args.softcap};
    const dim3 grid(static_cast<unsigned>(work.token_end - work.token_begin), static_cast<unsigned>(args.num_heads));
    combine_partitions_kernel<Out, kHeadDim><<<grid, kThreads, 0, stream>>>(combine, work);
    CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace

template <typename Kv, typename Out>
void launch_paged_attention(const PagedAttentionArgsOf<Kv, Out>& args, const AttentionWork& work, cudaStream_t stream) {
  if (args.window < 0 || args.softcap < 0.0f)
    throw_cuda_error(cudaErrorInvalidValue, "launch_paged_attention: negative window or soft-cap (0 means none)",
                     __FILE__, __LINE__);
  switch (args.layout.head_dim) {
    case 64:
      launch_for_head_dim<Kv, Out, 64>(args, work, stream);
      break;
    case 96:
      launch_for_head_dim<Kv, Out, 96>(args, work, stream);
      break;
    case 128:
      launch_for_head_dim<Kv, Out, 128>(args, work, stream);
      break;
    case 256:
      launch_for_head_dim<Kv, Out, 256>(args, work, stream);
      break;
    default:
      throw_cuda_error(cudaErrorInvalidValue, "launch_paged_attention: unsupported head_dim", __FILE__, __LINE__);
  }
}

template void launch_paged_attention<float, float>(const PagedAttentionArgsOf<float, float>&, const AttentionWork&,
                                                   cudaStream_t);
template void launch_paged_attention<__half, __half>(const PagedAttentionArgsOf<__half, __half>&, const AttentionWork&,
                                                     cudaStream_t);
template void launch_paged_attention<__nv_bfloat16, __nv_bfloat16>(
    const PagedAttentionArgsOf<__nv_bfloat16, __nv_bfloat16>&, const AttentionWork&, cudaStream_t);

}  // namespace pagedgen::gpu
