#include "fused_mlp_kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "cuda_check.h"
#include "dtype_traits.cuh"
#include "fused_mlp_plan.h"
#include "gated_activation.cuh"

namespace pagedgen::gpu {

namespace {

// One warp per kColumns adjacent output columns j0, j0 + 1: it streams their gate rows and
// up rows (kWeightRows rows of w_gate_up) once, in 16-byte vectors of 8 elements. Lane l
// takes vectors l, l + 32, l + 64, ... of every weight row, kUnroll of them per row loaded
// before any is used (kWeightRows * kUnroll loads in flight per lane), and multiplies each
// with the same vector of every x row (at most 16 rows: they stay in L1):
//
//   w_gate_up row j0        | l0 | l1 | ... | l31 | l0 | l1 | ... | l31 | l0 ...
//   w_gate_up row j0 + 1    | l0 | l1 | ... ...
//   w_gate_up row ffn + j0  | l0 | l1 | ... ...       (each cell 8 elements)
//   w_gate_up row ffn + j0 + 1
//
// Every (x row, weight row) sum: a lane's vectors in order, each vector's elements in
// order, by fused multiply-adds, then the lanes' sums by an xor butterfly (16, 8, 4, 2, 1),
// which gives every lane the same bits. Nothing in that order depends on num_rows or kRows.
constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kColumns = 2;
constexpr int kWeightRows = 2 * kColumns;
constexpr int kUnroll = 4;
constexpr int kVector = kFusedMlpVectorElements;
static_assert(kVector * 2 == sizeof(uint4), "a vector is 16 bytes of a 16-bit type");

// kRows >= num_rows: the instantiation's row capacity (1, 2, 4, 8, or 16 for the benchmark
// past the backend's threshold: fused_mlp_plan.h); rows past num_rows are skipped, never read.
template <typename T, int kRows>
__global__ void __launch_bounds__(kThreads) fused_mlp_kernel(FusedMlpArgs<T> args) {
  const int lane = threadIdx.x % 32;
  const int64_t j0 = (static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32) * kColumns;
  if (j0 >= args.ffn) return;  // the whole warp
  const int num_vectors = args.hidden / kVector;
  const int num_rows = args.num_rows;
  // Weight row c < kColumns: the gate row of column j0 + c; kColumns + c: its up row. A
  // column past ffn reads the last column's rows again and writes nothing.
  const uint4* w[kWeightRows];
#pragma unroll
  for (int c = 0; c < kColumns; ++c) {
    const int64_t j = j0 + c < args.ffn ? j0 + c : args.ffn - 1;
    w[c] = reinterpret_cast<const uint4*>(args.w_gate_up + j * args.hidden);
    w[kColumns + c] = reinterpret_cast<const uint4*>(args.w_gate_up + (args.ffn + j) * args.hidden);
  }
  const uint4* x = reinterpret_cast<const uint4*>(args.x);
  float sum[kRows][kWeightRows] = {};
  for (int base = lane; base < num_vectors; base += 32 * kUnroll) {
    uint4 loaded[kUnroll][kWeightRows];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int k = 0; k < kWeightRows; ++k)  // streamed once: evict first
        loaded[u][k] = base + 32 * u < num_vectors ? __ldcs(w[k] + base + 32 * u) : uint4{};
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int v = base + 32 * u;
      if (v >= num_vectors) break;
      float wf[kWeightRows][kVector];
#pragma unroll
      for (int k = 0; k < kWeightRows; ++k) unpack_vector<T>(loaded[u][k], wf[k]);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (r >= num_rows) break;
        float xf[kVector];
        unpack_vector<T>(__ldg(x + static_cast<int64_t>(r) * num_vectors + v), xf);
#pragma unroll
        for (int k = 0; k < kWeightRows; ++k)
#pragma unroll
          for (int e = 0; e < kVector; ++e) sum[r][k] = __fmaf_rn(wf[k][e], xf[e], sum[r][k]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (r >= num_rows) break;
#pragma unroll
    for (int k = 0; k < kWeightRows; ++k)
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) sum[r][k] += __shfl_xor_sync(0xffffffffu, sum[r][k], offset);
    if (lane == 0) {
#pragma unroll
      for (int c = 0; c < kColumns; ++c)
        if (j0 + c < args.ffn)
          args.out[static_cast<int64_t>(r) * args.ffn + j0 + c] =
              from_float<T>(gated(args.activation, sum[r][c], sum[r][kColumns + c]));
    }
  }
}

template <typename T, int kRows>
void launch_rows(const FusedMlpArgs<T>& args, cudaStream_t stream) {
  const int64_t num_warps = (static_cast<int64_t>(args.ffn) + kColumns - 1) / kColumns;
  const auto blocks = static_cast<unsigned>((num_warps + kWarps - 1) / kWarps);
  fused_mlp_kernel<T, kRows><<<blocks, kThreads, 0, stream>>>(args);
  CUDA_CHECK(cudaGetLastError());
}

bool aligned_16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

template <typename T>
void launch_fused_mlp(const FusedMlpArgs<T>& args, cudaStream_t stream) {
  if (!fused_mlp_supports(args.num_rows, args.hidden) || !aligned_16(args.x) || !aligned_16(args.w_gate_up)) {
    const std::string what = "launch_fused_mlp: " + std::to_string(args.num_rows) + " rows of hidden size " +
                             std::to_string(args.hidden) + (aligned_16(args.x) ? "" : ", x not 16-byte aligned") +
                             (aligned_16(args.w_gate_up) ? "" : ", w_gate_up not 16-byte aligned") +
                             "; it takes 1 to " + std::to_string(kFusedMlpKernelMaxRows) +
                             " rows, a hidden size that is a multiple of " + std::to_string(kFusedMlpVectorElements) +
                             " and 16-byte aligned inputs (fused_mlp_supports; otherwise the GEMM path)";
    throw_cuda_error(cudaErrorInvalidValue, what.c_str(), __FILE__, __LINE__);
  }
  if (args.ffn <= 0) return;
  static_assert(kFusedMlpKernelMaxRows == 16, "the instantiations below cover 1 to 16 rows");
  if (args.num_rows <= 1)
    launch_rows<T, 1>(args, stream);
  else if (args.num_rows <= 2)
    launch_rows<T, 2>(args, stream);
  else if (args.num_rows <= 4)
    launch_rows<T, 4>(args, stream);
  else if (args.num_rows <= 8)
    launch_rows<T, 8>(args, stream);
  else
    launch_rows<T, 16>(args, stream);
}

template void launch_fused_mlp<__half>(const FusedMlpArgs<__half>&, cudaStream_t);
template void launch_fused_mlp<__nv_bfloat16>(const FusedMlpArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace pagedgen::gpu
