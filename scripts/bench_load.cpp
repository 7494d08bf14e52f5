// Benchmark (not a test): how long loading a model's weights takes and how much anonymous
// host memory (RssAnon: not the mapped file's pages) the process holds at its peak while it
// does, on the CPU backend (the weights it keeps: --cpu-math fast keeps quantized and 16-bit
// matrices as stored, exact dequantizes all to float32) or the CUDA backend (streamed to the
// device, nothing kept on the host). RssAnon and RssFile are sampled from
// /proc/self/status every millisecond by a second thread. Prints one JSON line; driven by
// scripts/bench-load.sh, which writes the model and prints the table.
//   bench_load --model PATH [--device cpu|cuda] [--cpu-math fast|exact] [--dtype bfloat16]
#include <fmt/core.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "cpu/cpu_backend.h"
#include "loader/model_files.h"
#include "model/model_weights.h"

#if PAGEDGEN_HAVE_CUDA
#include "cuda_backend.h"
#endif

namespace {

using namespace pagedgen;

struct Rss {
  uint64_t anon_bytes = 0;
  uint64_t file_bytes = 0;
};

// RssAnon and RssFile of this process, from /proc/self/status ("RssAnon:  1234 kB").
Rss read_rss() {
  std::ifstream status("/proc/self/status");
  Rss rss;
  std::string line;
  while (std::getline(status, line)) {
    const auto kib = [&] { return std::stoull(line.substr(line.find(':') + 1)) * 1024; };
    if (line.starts_with("RssAnon:")) rss.anon_bytes = kib();
    if (line.starts_with("RssFile:")) rss.file_bytes = kib();
  }
  return rss;
}

// The highest RssAnon and RssFile seen while it lives.
class RssSampler {
 public:
  RssSampler()
      : thread_([this] {
          while (!stop_.load()) {
            const Rss now = read_rss();
            peak_anon_ = std::max(peak_anon_.load(), now.anon_bytes);
            peak_file_ = std::max(peak_file_.load(), now.file_bytes);
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
        }) {}
  ~RssSampler() { stop(); }
  void stop() {
    if (thread_.joinable()) {
      stop_.store(true);
      thread_.join();
    }
  }
  uint64_t peak_anon() const { return peak_anon_.load(); }
  uint64_t peak_file() const { return peak_file_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> peak_anon_{0};
  std::atomic<uint64_t> peak_file_{0};
  std::thread thread_;
};

uint64_t weight_file_bytes(const ModelFiles& files) {
  uint64_t bytes = 0;
  for (const RawTensor& t : files.tensors()) bytes += t.data.size();
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, device = "cpu", cpu_math = "fast", dtype = "bfloat16";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--model")
      model = argv[i + 1];
    else if (flag == "--device")
      device = argv[i + 1];
    else if (flag == "--cpu-math")
      cpu_math = argv[i + 1];
    else if (flag == "--dtype")
      dtype = argv[i + 1];
  }
  if (model.empty() || (device != "cpu" && device != "cuda") || (cpu_math != "fast" && cpu_math != "exact")) {
    fmt::print(stderr,
               "usage: bench_load --model PATH [--device cpu|cuda] [--cpu-math fast|exact] [--dtype bfloat16]\n");
    return 2;
  }
  try {
    const uint64_t anon_before = read_rss().anon_bytes;
    RssSampler sampler;
    const auto start = std::chrono::steady_clock::now();
    const ModelFiles files(model);
    std::unique_ptr<ModelWeights> host_weights;
    std::unique_ptr<Backend> backend;
    std::string mode;
    if (device == "cpu") {
      const WeightForm form = cpu_math == "fast" ? WeightForm::kPackedWhereQuantized : WeightForm::kFloat32;
      host_weights = std::make_unique<ModelWeights>(files.load_weights(form));
      backend = std::make_unique<CpuBackend>(files.config(), *host_weights);
      mode = "cpu-math " + cpu_math;
    } else {
#if PAGEDGEN_HAVE_CUDA
      gpu::CudaBackendOptions options;
      options.dtype = gpu::parse_device_dtype(dtype).value_or(gpu::DeviceDtype::BF16);
      backend = std::make_unique<gpu::CudaBackend>(files.config(), files.tensors(), model, options);
      mode = "dtype " + dtype;
#else
      fmt::print(stderr, "bench_load: this build has no CUDA backend\n");
      return 2;
#endif
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    sampler.stop();
    const Rss after = read_rss();
    fmt::print(
        "{{\"bench\": \"load\", \"model\": \"{}\", \"device\": \"{}\", \"mode\": \"{}\", \"file_bytes\": {}, "
        "\"load_s\": {:.3f}, \"rss_anon_before_bytes\": {}, \"peak_rss_anon_bytes\": {}, "
        "\"rss_anon_after_bytes\": {}, \"peak_rss_file_bytes\": {}}}\n",
        model, device, mode, weight_file_bytes(files), seconds, anon_before,
        std::max(sampler.peak_anon(), after.anon_bytes), after.anon_bytes,
        std::max(sampler.peak_file(), after.file_bytes));
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_load: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
