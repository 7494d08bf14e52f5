// Benchmark (not a test) of the CUDA backend's forward steps, driven directly with
// synthetic StepBatches (no tokenizer, no engine): prefill tokens/s; decode tokens/s and
// step time at batch 1, 64 and 256 against the floor (weight and KV bytes read over the
// measured device copy bandwidth); decode at block size 16 vs 64.
//   bench_gpu (--model MODEL.gguf | --dummy CONFIG.json) [--name NAME] [--dtype bfloat16]
// Prints "ROW|name|metric|value|note" lines (scripts/gpu-check.sh tabulates them) and a
// JSON line at the end.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cuda_backend.h"
#include "device_buffer.h"
#include "model/dummy_weights.h"
#include "loader/model_files.h"

using namespace pagedgen;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr int32_t kContext = 512;     // decode: tokens already in each sequence's cache
constexpr int32_t kDecodeSteps = 16;  // timed decode steps per configuration
constexpr int32_t kPrefillSeqs = 4;   // prefill: 4 prompts of 512 tokens per step
constexpr int32_t kPrefillSteps = 3;

// Device-to-device copy bandwidth in bytes/s (bytes read + bytes written).
double copy_bandwidth() {
  constexpr std::size_t kBytes = std::size_t{1} << 30;
  gpu::DeviceBuffer a(kBytes), b(kBytes);
  CUDA_CHECK(cudaMemset(a.data(), 1, kBytes));
  CUDA_CHECK(cudaMemcpy(b.data(), a.data(), kBytes, cudaMemcpyDeviceToDevice));
  CUDA_CHECK(cudaDeviceSynchronize());
  constexpr int kReps = 10;
  const auto start = Clock::now();
  for (int i = 0; i < kReps; ++i) CUDA_CHECK(cudaMemcpy(b.data(), a.data(), kBytes, cudaMemcpyDeviceToDevice));
  CUDA_CHECK(cudaDeviceSynchronize());
  return 2.0 * kBytes * kReps / seconds_since(start);
}

// num_seqs sequences, sequence s owning blocks [s * blocks_per_seq, (s + 1) * blocks_per_seq),
// each computing `num_new` tokens from position `first`; every sequence needs logits.
StepBatch make_batch(int32_t num_seqs, int32_t first, int32_t num_new, int32_t block_size, int32_t blocks_per_seq,
                     int64_t vocab) {
  StepBatch b;
  b.num_seqs = num_seqs;
  b.block_size = block_size;
  b.max_blocks_per_seq = blocks_per_seq;
  b.query_start.push_back(0);
  for (int32_t s = 0; s < num_seqs; ++s) {
    for (int32_t i = 0; i < blocks_per_seq; ++i) b.block_tables.push_back(s * blocks_per_seq + i);
    for (int32_t p = first; p < first + num_new; ++p) {
      b.token_ids.push_back(static_cast<int32_t>((s * 7919 + p * 104729) % vocab));
      b.positions.push_back(p);
      b.slot_mapping.push_back(int64_t{s * blocks_per_seq + p / block_size} * block_size + p % block_size);
    }
    b.query_start.push_back(static_cast<int32_t>(b.token_ids.size()));
    b.context_lens.push_back(first + num_new);
    b.logits_rows.push_back(static_cast<int32_t>(b.token_ids.size()) - 1);
  }
  b.num_tokens = static_cast<int32_t>(b.token_ids.size());
  return b;
}

struct Bench {
  std::string name;
  const ModelConfig& config;
  gpu::CudaBackend& backend;
  std::size_t weight_bytes;
  double bandwidth;
  std::string json;

  void row(const std::string& metric, double value, const std::string& note = "") {
    fmt::print("ROW|{}|{}|{:.4g}|{}\n", name, metric, value, note);
    json += fmt::format("{}\"{}\": {:.6g}", json.empty() ? "" : ", ", metric, value);
  }

  void prefill() {
    const int32_t blocks_per_seq = kContext / 16;
    backend.allocate_kv_pool(static_cast<std::size_t>(kPrefillSeqs * blocks_per_seq), 16);
    const StepBatch batch = make_batch(kPrefillSeqs, 0, kContext, 16, blocks_per_seq, config.vocab_size);
    std::vector<float> logits(batch.logits_rows.size() * static_cast<std::size_t>(config.vocab_size));
    backend.forward(batch, logits);  // warm-up
    const auto start = Clock::now();
    for (int32_t i = 0; i < kPrefillSteps; ++i) backend.forward(batch, logits);
    row("prefill_tokens_per_s", batch.num_tokens * kPrefillSteps / seconds_since(start),
        "4 x 512-token prompts per step");
  }

  // Returns the mean step time in seconds.
  double decode(int32_t batch_size, int32_t block_size, bool report) {
    const int32_t blocks_per_seq = (kContext + kDecodeSteps + 2 + block_size - 1) / block_size;
    backend.allocate_kv_pool(static_cast<std::size_t>(batch_size) * static_cast<std::size_t>(blocks_per_seq),
                             static_cast<std::size_t>(block_size));
    std::vector<float> logits(static_cast<std::size_t>(batch_size) * static_cast<std::size_t>(config.vocab_size));
    for (int32_t i = 0; i < 2; ++i)  // warm-up
      backend.forward(make_batch(batch_size, kContext + i, 1, block_size, blocks_per_seq, config.vocab_size), logits);
    std::vector<StepBatch> batches;
    for (int32_t i = 0; i < kDecodeSteps; ++i)
      batches.push_back(make_batch(batch_size, kContext + 2 + i, 1, block_size, blocks_per_seq, config.vocab_size));
    const auto start = Clock::now();
    for (const StepBatch& b : batches) backend.forward(b, logits);
    const double step = seconds_since(start) / kDecodeSteps;
    if (report) {
      // Each step reads every cached position's K and V once (mean context over the steps).
      const double kv_read = static_cast<double>(batch_size) * (kContext + 2 + kDecodeSteps / 2) *
                             static_cast<double>(backend.kv_bytes_per_block(1));
      const double floor = (static_cast<double>(weight_bytes) + kv_read) / bandwidth;
      const std::string b = fmt::format("b{}", batch_size);
      row("decode_" + b + "_tokens_per_s", batch_size / step, fmt::format("context {}", kContext));
      row("decode_" + b + "_step_ms", step * 1e3);
      row("decode_" + b + "_floor_ms", floor * 1e3, "(weights + KV read) / copy bandwidth");
      row("decode_" + b + "_step_over_floor", step / floor, "target <= 1.25");
    }
    return step;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string model, dummy, name, dtype_name = "bfloat16";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--model")
      model = argv[i + 1];
    else if (flag == "--dummy")
      dummy = argv[i + 1];
    else if (flag == "--name")
      name = argv[i + 1];
    else if (flag == "--dtype")
      dtype_name = argv[i + 1];
  }
  if (model.empty() == dummy.empty()) {
    fmt::print(stderr,
               "usage: bench_gpu (--model MODEL.gguf | --dummy CONFIG.json) [--name NAME] [--dtype bfloat16]\n");
    return 2;
  }
  try {
    gpu::CudaBackendOptions options;
    options.dtype = gpu::parse_device_dtype(dtype_name).value_or(gpu::DeviceDtype::BF16);
    options.max_batch_tokens = kPrefillSeqs * kContext;
    options.max_logits_rows = 256;
    std::unique_ptr<ModelFiles> files;
    ModelConfig config;
    std::unique_ptr<gpu::CudaBackend> backend;
    const auto load_start = Clock::now();
    if (!model.empty()) {
      files = std::make_unique<ModelFiles>(model);
      config = files->config();
      backend = std::make_unique<gpu::CudaBackend>(config, files->tensors(), model, options);
    } else {
      config = dummy_model_config(dummy);
      backend = std::make_unique<gpu::CudaBackend>(config, 0, options);
    }
    if (name.empty()) name = model.empty() ? dummy : model;
    fmt::print(stderr, "bench_gpu: {} on {} ({}), loaded in {:.1f} s\n", name, backend->device(), dtype_name,
               seconds_since(load_start));
    Bench bench{
        name, config, *backend, static_cast<std::size_t>(backend->device_memory().weight_bytes), copy_bandwidth(), ""};
    bench.row("copy_bandwidth_GBps", bench.bandwidth / 1e9, "device-to-device, read + write");
    bench.row("weight_GiB", static_cast<double>(bench.weight_bytes) / (1 << 30));
    bench.prefill();
    for (int32_t batch_size : {1, 64, 256}) bench.decode(batch_size, 16, true);
    const double at_16 = bench.decode(64, 16, false);
    const double at_64 = bench.decode(64, 64, false);
    bench.row("decode_b64_bs64_over_bs16", at_64 / at_16, "target within 5%");
    fmt::print("{{\"bench\": \"gpu\", \"model\": \"{}\", {}}}\n", name, bench.json);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_gpu: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
