#include "backend_option.h"

#include <fmt/core.h>

#include <algorithm>
#include <optional>
#include <regex>

#include "backend/cpu_backend.h"
#include "model/dummy_weights.h"
#include "model_option.h"
#include "tokenizer/tokenizer.h"
#include "util/byte_units.h"
#include "util/error.h"
#include "util/parallel_for.h"

#if PAGEDGEN_HAVE_CUDA
#include "cuda_backend.h"
#include "device_info.h"
#endif

namespace pagedgen::app {

namespace {

// Dummy weights are the same for every run: throughput runs compare like with like.
constexpr uint64_t kDummySeed = 0;

ChosenBackend make_cpu_backend(const BackendOptions& options, const EngineOptions& engine, const ModelSource& source,
                               int32_t block_size) {
  ChosenBackend chosen;
  chosen.host_weights = std::make_unique<ModelWeights>(source.dummy ? make_dummy_weights(source.config, kDummySeed)
                                                                    : load_model_weights(*source.files));
  chosen.backend = std::make_unique<CpuBackend>(source.config, *chosen.host_weights,
                                                options.threads > 0 ? options.threads : default_num_threads());
  chosen.num_blocks =
      pool_blocks(engine, block_size, chosen.backend->kv_bytes_per_block(static_cast<std::size_t>(block_size)));
  return chosen;
}

#if PAGEDGEN_HAVE_CUDA
ChosenBackend make_cuda_backend(const BackendOptions& options, const EngineOptions& engine, const ModelSource& source,
                                int32_t block_size, int device_index) {
  gpu::CudaBackendOptions cuda;
  cuda.device = device_index;
  const std::optional<gpu::DeviceDtype> dtype = gpu::parse_device_dtype(options.dtype);
  if (!dtype) fail("--dtype '{}' is not one of bfloat16, float16, float32", options.dtype);
  cuda.dtype = *dtype;
  cuda.max_batch_tokens = engine.max_batch_tokens;
  cuda.max_logits_rows = engine.max_num_seqs;
  gpu::CudaBackend::check_supported(source.config);
  ChosenBackend chosen;
  std::unique_ptr<gpu::CudaBackend> backend;
  if (source.dummy) {
    backend = std::make_unique<gpu::CudaBackend>(source.config, kDummySeed, cuda);
  } else {
    // The float32 host copy is only a staging step: it is freed once on the device.
    const ModelWeights host = load_model_weights(*source.files);
    backend = std::make_unique<gpu::CudaBackend>(source.config, host, cuda);
  }
  const std::size_t per_block = backend->kv_bytes_per_block(static_cast<std::size_t>(block_size));
  if (engine.num_blocks > 0 || !engine.kv_cache_memory.empty()) {
    chosen.num_blocks = pool_blocks(engine, block_size, per_block);
  } else {
    const std::size_t budget = backend->kv_budget_bytes(options.gpu_memory_utilization);
    if (budget < per_block)
      fail("--gpu-memory-utilization {} leaves {} after weights and activations, less than one KV block of {}; "
           "raise it or lower --max-batch-tokens",
           options.gpu_memory_utilization, format_bytes(budget), format_bytes(per_block));
    chosen.num_blocks = static_cast<int32_t>(std::min<std::size_t>(budget / per_block, INT32_MAX));
  }
  chosen.device = backend->device_description();
  chosen.backend = std::move(backend);
  return chosen;
}
#endif

// The GPU index --device names: 0 for auto and cuda, N for cuda:N; nullopt for cpu.
std::optional<int> cuda_device_index(const std::string& device) {
  if (device == "cpu") return std::nullopt;
  if (device == "auto" || device == "cuda") return 0;
  return std::stoi(device.substr(5));  // "cuda:N", as the option's check allows
}

}  // namespace

void add_backend_options(CLI::App& command, BackendOptions& o) {
  command.add_option("--device", o.device,
                     "Where to run: auto (GPU 0 when there is one, else the CPU), cuda (GPU 0), cuda:N (GPU N), cpu")
      ->capture_default_str()
      ->check([](const std::string& value) -> std::string {
        static const std::regex valid("auto|cpu|cuda|cuda:[0-9]{1,3}");
        return std::regex_match(value, valid) ? "" : "must be auto, cpu, cuda or cuda:N (N a GPU index)";
      });
  command.add_option("--dtype", o.dtype, "GPU weights, activations and KV cache: bfloat16, float16, float32")
      ->capture_default_str()
      ->check(CLI::IsMember({"bfloat16", "float16", "float32"}));
  command.add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                     "Fraction of GPU memory to fill; the KV pool takes what weights and activations leave")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 1.0));
  command.add_option("--load-format", o.load_format,
                     "auto: weights from the model files; dummy: -m names an HF config.json (or its directory) "
                     "and the weights are random, for throughput runs (needs --tokenizer)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "dummy"}));
  command.add_option("--tokenizer", o.tokenizer,
                     "With --load-format dummy: a .gguf file or HF directory whose tokenizer and chat template to use");
}

ModelSource open_model_source(const BackendOptions& options, const std::string& model_path) {
  ModelSource source;
  if (options.load_format != "dummy") {
    source.files = std::make_unique<ModelFiles>(resolve_model_path(model_path));
    source.config = source.files->config();
    source.name = source.files->path().string();
    return source;
  }
  if (model_path.empty()) fail("--load-format dummy needs -m CONFIG.json (an HF config, e.g. samples/llama-3-8b.config.json)");
  if (options.tokenizer.empty())
    fail("--load-format dummy needs --tokenizer MODEL (a .gguf file or HF directory) to tokenize prompts and decode "
         "output");
  source.dummy = true;
  source.config = dummy_model_config(model_path);
  source.files = std::make_unique<ModelFiles>(options.tokenizer);
  source.name = "dummy:" + model_path;
  const int32_t tokenizer_vocab = source.files->tokenizer().vocab_size();
  if (tokenizer_vocab > source.config.vocab_size)
    fail("--tokenizer '{}' has {} tokens, more than the dummy model's vocabulary of {}", options.tokenizer,
         tokenizer_vocab, source.config.vocab_size);
  return source;
}

ChosenBackend make_backend(const BackendOptions& options, const EngineOptions& engine, const ModelSource& source,
                           int32_t block_size, bool quiet) {
  const std::optional<int> index = cuda_device_index(options.device);
  if (!index) return make_cpu_backend(options, engine, source, block_size);
  const bool required = options.device != "auto";
#if PAGEDGEN_HAVE_CUDA
  std::string why_none;
  const std::vector<gpu::DeviceInfo> devices = gpu::list_devices(&why_none);
  if (*index < std::ssize(devices)) {
    ChosenBackend chosen = make_cuda_backend(options, engine, source, block_size, *index);
    if (!quiet) fmt::print(stderr, "pagedgen: running on cuda:{}, {}\n", *index, chosen.device);
    return chosen;
  }
  if (required && !devices.empty())
    fail("--device {}, but only {} GPU(s) are visible (cuda:0 to cuda:{})", options.device, devices.size(),
         devices.size() - 1);
  if (required) fail("--device {}, but no GPU is usable: {}; use --device cpu or auto", options.device, why_none);
  if (!quiet) fmt::print(stderr, "pagedgen: no GPU ({}); running on the CPU\n", why_none);
#else
  if (required)
    fail("--device {}, but this pagedgen was built without CUDA (the CUDA toolkit was not found at build time)",
         options.device);
#endif
  return make_cpu_backend(options, engine, source, block_size);
}

}  // namespace pagedgen::app
