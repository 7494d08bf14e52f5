// Benchmark (not a test) of the attention kernels alone, on synthetic paged KV pools of the
// Llama-3-8B attention shape (32 query heads, 8 KV heads, head_dim 128, bfloat16, block
// size 16), and of the MLP's gate/up projection, against ceilings measured in the same run:
// device copy bandwidth (cudaMemcpy device to device, bytes read + written) and the
// bfloat16 GEMM rate of the backend's cuBLAS GEMM (8192^3). Per kernel and shape it prints
// the time, the achieved bandwidth (decode: K/V bytes read) or FLOP/s (prefill: 4 * heads *
// head_dim per (query, visible position)) and the ratio to its ceiling:
//   - decode attention (CUDA-core kernel) at contexts 1k/8k/32k, batch 1/64/256;
//   - prefill attention, CUDA-core and tensor-core kernels, 512-8192 new tokens over
//     0/4k/32k cached tokens (one sequence);
//   - shared-prefix decode, 8 groups x 32 sequences over 8k-token prefixes: the CUDA-core
//     kernel (every sequence reads its prefix), tensor tiles per sequence, and cascade;
//   - the MLP's gate/up projection + activation at 1, 4, 8, 12 and 16 rows, Llama-3-8B's
//     and SmolLM2-135M's shapes: cuBLAS GEMM + activation kernel against the fused kernel
//     (w_gate_up bytes read, the ratio to copy bandwidth, the speedup). The backend fuses
//     up to kFusedMlpMaxRows (8) rows; the kernel takes up to kFusedMlpKernelMaxRows (16),
//     so the rows past 8 show where the crossover with cuBLAS lies.
// Kernel time only (CUDA events); host planning is timed apart.
//   bench_kernels [--quick]      (--quick: the smallest shape of each kind; for the MLP,
//                                 Llama-3-8B's at 1, 8 and 16 rows)
// Prints "ROW|kernel|shape|metric|value|note" lines and a JSON line at the end.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "attention_plan.h"
#include "cuda_check.h"
#include "cuda_gemm.h"
#include "device_buffer.h"
#include "fused_mlp_kernel.h"
#include "fused_mlp_plan.h"
#include "llama_kernels.h"
#include "paged_attention_kernel.h"
#include "shared_prefix_groups.h"
#include "tensor_attention_kernel.h"
#include "tensor_attention_plan.h"

using namespace pagedgen;

namespace {

using T = __nv_bfloat16;
constexpr int32_t kHeads = 32;
constexpr int32_t kKvHeads = 8;
constexpr int32_t kHeadDim = 128;
constexpr int32_t kGroup = kHeads / kKvHeads;
constexpr int32_t kBlockSize = 16;
constexpr double kKvBytesPerToken = 2.0 * kKvHeads * kHeadDim * sizeof(T);  // K and V

// Mean seconds of `launch` on the default stream over `reps` runs, after 2 warm-ups.
double time_kernel(const std::function<void()>& launch, int reps = 10) {
  for (int i = 0; i < 2; ++i) launch();
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start));
  for (int i = 0; i < reps; ++i) launch();
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return ms * 1e-3 / reps;
}

double copy_bandwidth() {
  constexpr std::size_t kBytes = std::size_t{1} << 30;
  gpu::DeviceBuffer a(kBytes), b(kBytes);
  CUDA_CHECK(cudaMemset(a.data(), 1, kBytes));
  const double s =
      time_kernel([&] { CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), kBytes, cudaMemcpyDeviceToDevice)); });
  return 2.0 * kBytes / s;
}

double gemm_rate() {
  constexpr int64_t n = 8192;
  gpu::DeviceBuffer x(n * n * sizeof(T)), w(n * n * sizeof(T)), y(n * n * sizeof(float));
  CUDA_CHECK(cudaMemset(x.data(), 0x3c, x.bytes()));
  CUDA_CHECK(cudaMemset(w.data(), 0x3c, w.bytes()));
  gpu::CudaGemm gemm(nullptr, gpu::DeviceDtype::BF16);
  const double s = time_kernel([&] { gemm.run(x.data(), w.data(), y.as<float>(), n, n, n); }, 5);
  return 2.0 * n * n * n / s;
}

// Sequence s computes `num_new[s]` tokens from position `first[s]`; `tables[s]` its blocks.
StepBatch make_batch(const std::vector<std::vector<int32_t>>& tables, const std::vector<int32_t>& first,
                     const std::vector<int32_t>& num_new) {
  StepBatch b;
  b.num_seqs = static_cast<int32_t>(tables.size());
  b.block_size = kBlockSize;
  for (const auto& t : tables) b.max_blocks_per_seq = std::max(b.max_blocks_per_seq, static_cast<int32_t>(t.size()));
  b.query_start.push_back(0);
  for (std::size_t s = 0; s < tables.size(); ++s) {
    for (int32_t p = first[s]; p < first[s] + num_new[s]; ++p) b.positions.push_back(p);
    b.query_start.push_back(static_cast<int32_t>(b.positions.size()));
    b.context_lens.push_back(first[s] + num_new[s]);
    std::vector<int32_t> row = tables[s];
    row.resize(static_cast<std::size_t>(b.max_blocks_per_seq), 0);
    b.block_tables.insert(b.block_tables.end(), row.begin(), row.end());
  }
  b.num_tokens = static_cast<int32_t>(b.positions.size());
  return b;
}

// Sequences of `lengths` positions, each on its own consecutive blocks from `next_block`.
std::vector<std::vector<int32_t>> own_tables(const std::vector<int32_t>& lengths, int32_t& next_block) {
  std::vector<std::vector<int32_t>> tables;
  for (int32_t n : lengths) {
    std::vector<int32_t> t;
    for (int32_t b = 0; b < (n + kBlockSize - 1) / kBlockSize; ++b) t.push_back(next_block++);
    tables.push_back(t);
  }
  return tables;
}

// A step's device arrays and a KV pool, and the two kernels' launches over them.
class AttentionRig {
 public:
  AttentionRig(const StepBatch& batch, int32_t num_blocks)
      : batch_(batch),
        layout_{num_blocks, kKvHeads, kBlockSize, kHeadDim},
        k_(static_cast<std::size_t>(layout_.elements_per_layer()) * sizeof(T)),
        v_(k_.bytes()),
        q_(static_cast<std::size_t>(batch.num_tokens) * kHeads * kHeadDim * sizeof(float)),
        out_(static_cast<std::size_t>(batch.num_tokens) * kHeads * kHeadDim * sizeof(T)),
        positions_(upload(batch.positions)),
        query_start_(upload(batch.query_start)),
        context_lens_(upload(batch.context_lens)),
        tables_(upload(batch.block_tables)) {
    CUDA_CHECK(cudaMemset(k_.data(), 0x3c, k_.bytes()));  // bfloat16 0x3c3c, about 0.0115
    CUDA_CHECK(cudaMemset(v_.data(), 0x3c, v_.bytes()));
    CUDA_CHECK(cudaMemset(q_.data(), 0, q_.bytes()));
  }

  PagedAttentionArgsOf<T, T> args() const {
    return PagedAttentionArgsOf<T, T>{q_.as<float>(),
                                      k_.as<T>(),
                                      v_.as<T>(),
                                      out_.as<T>(),
                                      positions_.as<int32_t>(),
                                      query_start_.as<int32_t>(),
                                      context_lens_.as<int32_t>(),
                                      tables_.as<int32_t>(),
                                      batch_.num_tokens,
                                      batch_.num_seqs,
                                      batch_.max_blocks_per_seq,
                                      kHeads,
                                      1.0f / 11.3137085f,
                                      layout_};
  }

  // The CUDA-core kernel (paged_attention_kernel.h), every token in one launch.
  std::function<void()> cuda_core() {
    int64_t partials = 1;
    for (int32_t p : batch_.positions) partials += gpu::attention_partitions(p);
    const gpu::AttentionPlan plan = gpu::plan_attention(batch_, kGroup, partials, /*window=*/0);
    items_ = upload(plan.items);
    partial_index_ = upload(plan.partial_index);
    reserve_partials(partials);
    return [this, plan] {
      for (const gpu::AttentionLaunch& l : plan.launches)
        gpu::launch_paged_attention(
            args(),
            gpu::AttentionWork{items_.as<gpu::AttentionWorkItem>() + l.item_begin, l.item_end - l.item_begin,
                               l.token_begin, l.token_end, partial_index_.as<int32_t>(), partial_out_.as<float>(),
                               partial_max_.as<float>(), partial_sum_.as<float>()},
            nullptr);
    };
  }

  // The tensor-core kernel (tensor_attention_kernel.h) over `plan`.
  std::function<void()> tensor(const gpu::TensorAttentionPlan& plan) {
    tiles_ = upload(plan.tiles);
    tile_tokens_ = upload(plan.tile_tokens);
    num_parts_ = upload(plan.num_parts);
    tile_partial_index_ = upload(plan.partial_index);
    reserve_partials(plan.num_partials + 1);
    const gpu::TensorAttentionWork work{tiles_.as<gpu::TensorAttentionTile>(),
                                        static_cast<int32_t>(plan.tiles.size()),
                                        tile_tokens_.as<int32_t>(),
                                        num_parts_.as<int32_t>(),
                                        tile_partial_index_.as<int32_t>(),
                                        plan.num_partials,
                                        nullptr,
                                        nullptr,
                                        nullptr};
    return [this, work] {
      gpu::TensorAttentionWork w = work;
      w.partial_out = partial_out_.as<float>();
      w.partial_max = partial_max_.as<float>();
      w.partial_sum = partial_sum_.as<float>();
      gpu::launch_tensor_attention(args(), w, nullptr);
    };
  }

 private:
  template <typename A>
  static gpu::DeviceBuffer upload(const std::vector<A>& values) {
    gpu::DeviceBuffer d(std::max<std::size_t>(1, values.size() * sizeof(A)));
    if (!values.empty())
      CUDA_CHECK(cudaMemcpy(d.data(), values.data(), values.size() * sizeof(A), cudaMemcpyHostToDevice));
    return d;
  }
  void reserve_partials(int64_t slots) {
    const auto n = static_cast<std::size_t>(slots) * kHeads;
    if (partial_max_.bytes() >= n * sizeof(float)) return;
    partial_out_ = gpu::DeviceBuffer(n * kHeadDim * sizeof(float));
    partial_max_ = gpu::DeviceBuffer(n * sizeof(float));
    partial_sum_ = gpu::DeviceBuffer(n * sizeof(float));
  }

  StepBatch batch_;
  KvLayout layout_;
  gpu::DeviceBuffer k_, v_, q_, out_, positions_, query_start_, context_lens_, tables_;
  gpu::DeviceBuffer items_, partial_index_, tiles_, tile_tokens_, num_parts_, tile_partial_index_;
  gpu::DeviceBuffer partial_out_, partial_max_, partial_sum_;
};

struct Report {
  double copy_bw;
  double gemm_flops;
  std::string json;

  void row(const std::string& kernel, const std::string& shape, const std::string& metric, double value,
           const std::string& note = "") {
    fmt::print("ROW|{}|{}|{}|{:.4g}|{}\n", kernel, shape, metric, value, note);
    json += fmt::format("{}\"{}/{}/{}\": {:.6g}", json.empty() ? "" : ", ", kernel, shape, metric, value);
  }
};

bool fits(double bytes) {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return bytes < 0.9 * static_cast<double>(free_bytes);
}

void decode_attention(Report& r, int32_t batch, int32_t context) {
  const std::string shape = fmt::format("b{}_ctx{}", batch, context);
  if (!fits(static_cast<double>(batch) * (context + kBlockSize) * kKvBytesPerToken)) {
    r.row("decode_attention", shape, "skipped", 0, "KV pool does not fit in device memory");
    return;
  }
  int32_t next = 0;
  const auto tables = own_tables(std::vector<int32_t>(static_cast<std::size_t>(batch), context), next);
  // The decode token at position context - 1 (its K/V written already).
  const StepBatch b = make_batch(tables, std::vector<int32_t>(static_cast<std::size_t>(batch), context - 1),
                                 std::vector<int32_t>(static_cast<std::size_t>(batch), 1));
  AttentionRig rig(b, next);
  const double s = time_kernel(rig.cuda_core());
  const double bw = batch * static_cast<double>(context) * kKvBytesPerToken / s;
  r.row("decode_attention", shape, "us", s * 1e6);
  r.row("decode_attention", shape, "GB_per_s", bw * 1e-9, "K/V bytes read / time");
  r.row("decode_attention", shape, "of_copy_bw", bw / r.copy_bw, "target >= 0.85 at context >= 8k");
}

void prefill_attention(Report& r, int32_t num_new, int32_t cached) {
  const std::string shape = fmt::format("new{}_cached{}", num_new, cached);
  int32_t next = 0;
  const auto tables = own_tables({cached + num_new}, next);
  const StepBatch b = make_batch(tables, {cached}, {num_new});
  AttentionRig rig(b, next);
  double flop = 0;
  for (int32_t p : b.positions) flop += 4.0 * kHeads * kHeadDim * (p + 1);
  const double cuda_core = time_kernel(rig.cuda_core(), 3);
  const double tensor = time_kernel(rig.tensor(gpu::plan_prefill_tiles(b, kGroup)), 3);
  r.row("prefill_attention_cuda_core", shape, "us", cuda_core * 1e6);
  r.row("prefill_attention_cuda_core", shape, "TFLOP_per_s", flop / cuda_core * 1e-12);
  r.row("prefill_attention_tensor", shape, "us", tensor * 1e6);
  r.row("prefill_attention_tensor", shape, "TFLOP_per_s", flop / tensor * 1e-12);
  r.row("prefill_attention_tensor", shape, "of_gemm_rate", flop / tensor / r.gemm_flops,
        "target >= 0.5 at new4096_cached4096");
}

void shared_prefix_decode(Report& r, int32_t num_groups, int32_t group_seqs, int32_t prefix, int32_t own) {
  const std::string shape = fmt::format("g{}x{}_prefix{}_own{}", num_groups, group_seqs, prefix, own);
  int32_t next = 0;
  std::vector<std::vector<int32_t>> tables;
  for (int32_t g = 0; g < num_groups; ++g) {
    const auto shared = own_tables({prefix}, next)[0];
    for (int32_t s = 0; s < group_seqs; ++s) {
      std::vector<int32_t> t = shared;
      const auto tail = own_tables({own}, next)[0];
      t.insert(t.end(), tail.begin(), tail.end());
      tables.push_back(t);
    }
  }
  const auto num_seqs = static_cast<std::size_t>(num_groups * group_seqs);
  const StepBatch b =
      make_batch(tables, std::vector<int32_t>(num_seqs, prefix + own - 1), std::vector<int32_t>(num_seqs, 1));
  AttentionRig rig(b, next);
  const auto plan_start = std::chrono::steady_clock::now();
  const auto cascade = gpu::plan_tensor_attention(b, kGroup, {4, 256}, 512, int64_t{1} << 20);
  const double plan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - plan_start).count();
  if (!cascade) {
    r.row("shared_prefix_decode", shape, "skipped", 0, "no cascade plan");
    return;
  }
  const double per_seq = time_kernel(rig.cuda_core());
  const double tensor_per_seq = time_kernel(rig.tensor(gpu::plan_prefill_tiles(b, kGroup)));
  const double cascaded = time_kernel(rig.tensor(*cascade));
  const double unique_bytes =
      (num_groups * static_cast<double>(prefix) + num_seqs * static_cast<double>(own)) * kKvBytesPerToken;
  r.row("shared_prefix_decode_cuda_core", shape, "us", per_seq * 1e6, "every sequence reads its prefix");
  r.row("shared_prefix_decode_tensor_per_seq", shape, "us", tensor_per_seq * 1e6);
  r.row("shared_prefix_decode_cascade", shape, "us", cascaded * 1e6, fmt::format("host plan {:.0f} us", plan_s * 1e6));
  r.row("shared_prefix_decode_cascade", shape, "speedup_vs_cuda_core", per_seq / cascaded, "target >= 4");
  r.row("shared_prefix_decode_cascade", shape, "unique_GB_per_s", unique_bytes / cascaded * 1e-9,
        "distinct K/V bytes / time");
}

// The gate/up projection + activation of `rows` rows (hidden -> ffn, bfloat16): the cuBLAS
// GEMM into float32 gate_up and the activation kernel (the backend's path past
// kFusedMlpMaxRows rows) against the fused kernel (which the backend uses up to
// kFusedMlpMaxRows, and takes up to kFusedMlpKernelMaxRows here). Launches cycle over copies of w_gate_up
// that together exceed the L2 cache, so every launch reads its weights from device memory.
void mlp_gate_up(Report& r, const std::string& model, int32_t hidden, int32_t ffn, int32_t rows) {
  const std::string shape = fmt::format("{}_rows{}", model, rows);
  const auto weight_bytes = 2 * static_cast<std::size_t>(ffn) * static_cast<std::size_t>(hidden) * sizeof(T);
  constexpr std::size_t kRotationBytes = std::size_t{256} << 20;  // H200's L2 is 50 MB
  const std::size_t num_copies = std::max<std::size_t>(2, (kRotationBytes + weight_bytes - 1) / weight_bytes);
  std::vector<gpu::DeviceBuffer> weights;
  for (std::size_t i = 0; i < num_copies; ++i) {
    weights.emplace_back(weight_bytes);
    CUDA_CHECK(cudaMemset(weights.back().data(), 0x3c, weight_bytes));  // bfloat16 0x3c3c, about 0.0115
  }
  gpu::DeviceBuffer xn(static_cast<std::size_t>(rows) * hidden * sizeof(T));
  gpu::DeviceBuffer gate_up(static_cast<std::size_t>(rows) * 2 * ffn * sizeof(float));
  gpu::DeviceBuffer act(static_cast<std::size_t>(rows) * ffn * sizeof(T));
  CUDA_CHECK(cudaMemset(xn.data(), 0x3c, xn.bytes()));
  gpu::CudaGemm gemm(nullptr, gpu::DeviceDtype::BF16);
  std::size_t next = 0;  // one count over both paths: neither finds the other's copies in L2
  const auto w = [&] { return weights[next++ % num_copies].as<T>(); };
  constexpr int kReps = 20;
  const double separate = time_kernel(
      [&] {
        gemm.run(xn.data(), w(), gate_up.as<float>(), rows, hidden, 2 * ffn);
        gpu::launch_gated_activation(gpu::GatedActivationArgs<T>{gate_up.as<float>(), act.as<T>(), rows, ffn}, nullptr);
      },
      kReps);
  const double fused = time_kernel(
      [&] {
        gpu::launch_fused_mlp(gpu::FusedMlpArgs<T>{xn.as<T>(), w(), act.as<T>(), rows, hidden, ffn}, nullptr);
      },
      kReps);
  const double bw = static_cast<double>(weight_bytes) / fused;
  r.row("mlp_gate_up", shape, "us_cublas_act", separate * 1e6, "cuBLAS GEMM into float32 gate_up + activation");
  r.row("mlp_gate_up", shape, "us_fused", fused * 1e6, fmt::format("hidden {}, ffn {}", hidden, ffn));
  r.row("mlp_gate_up", shape, "GB_per_s", bw * 1e-9, "fused: w_gate_up bytes read / time");
  r.row("mlp_gate_up", shape, "of_copy_bw", bw / r.copy_bw, "fused, reads only vs copy's read + write");
  r.row("mlp_gate_up", shape, "speedup", separate / fused,
        rows <= gpu::kFusedMlpMaxRows ? "cuBLAS + activation time / fused time (the backend fuses here)"
                                      : "cuBLAS + activation time / fused time (the backend runs cuBLAS here)");
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  try {
    Report r{copy_bandwidth(), gemm_rate(), ""};
    r.row("ceiling", "copy", "GB_per_s", r.copy_bw * 1e-9, "cudaMemcpy device to device, read + written");
    r.row("ceiling", "gemm_bf16_8192", "TFLOP_per_s", r.gemm_flops * 1e-12, "cublasLt through CudaGemm");
    for (int32_t context : quick ? std::vector<int32_t>{1024} : std::vector<int32_t>{1024, 8192, 32768})
      for (int32_t batch : quick ? std::vector<int32_t>{64} : std::vector<int32_t>{1, 64, 256})
        decode_attention(r, batch, context);
    for (int32_t num_new : quick ? std::vector<int32_t>{512} : std::vector<int32_t>{512, 2048, 4096, 8192})
      for (int32_t cached : quick ? std::vector<int32_t>{0} : std::vector<int32_t>{0, 4096, 32768})
        prefill_attention(r, num_new, cached);
    shared_prefix_decode(r, 8, 32, quick ? 1024 : 8192, 64);
    for (int32_t rows : quick ? std::vector<int32_t>{1, 8, 16} : std::vector<int32_t>{1, 4, 8, 12, 16}) {
      mlp_gate_up(r, "llama3_8b", 4096, 14336, rows);
      if (!quick) mlp_gate_up(r, "smollm2_135m", 576, 1536, rows);
    }
    fmt::print("{{\"bench\": \"kernels\", {}}}\n", r.json);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_kernels: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
