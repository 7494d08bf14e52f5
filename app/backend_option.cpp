#include "backend_option.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <regex>
#include <thread>

#include "backend/dry_run_backend.h"
#include "cpu/cpu_backend.h"
#include "model/dummy_weights.h"
#include "model_option.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/parallel_for.h"
#include "visible_gpus.h"

#if PAGEDGEN_HAVE_CUDA
#include "cuda_backend.h"
#include "device_info.h"
#endif

namespace pagedgen::app {

namespace {

// Dummy weights are the same for every run: throughput runs compare like with like.
constexpr uint64_t kDummySeed = 0;

// The instruction set --cpu-isa asks for; one the CPU lacks is refused.
cpu::CpuIsa chosen_cpu_isa(const BackendOptions& options) {
  if (options.cpu_isa == "auto") return cpu::best_cpu_isa();
  const cpu::CpuIsa asked = *cpu::parse_cpu_isa(options.cpu_isa);  // the option's check allows only known names
  if (!cpu::cpu_supports(asked)) {
    std::vector<std::string> names;
    for (cpu::CpuIsa isa : cpu::supported_cpu_isas()) names.push_back(cpu::cpu_isa_name(isa));
    fail_setting("cpu_isa", "{}, but this CPU supports only {}", options.cpu_isa, fmt::join(names, ", "));
  }
  return asked;
}

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options, const ModelSource& source,
                                          std::unique_ptr<ModelWeights>& host_weights, const StopToken& stop) {
  const cpu::CpuIsa isa = chosen_cpu_isa(options);
  const WeightForm form = options.cpu_math == "fast" ? WeightForm::kPackedWhereQuantized : WeightForm::kFloat32;
  host_weights = std::make_unique<ModelWeights>(source.dummy ? make_dummy_weights(source.config, kDummySeed, stop)
                                                             : source.files->load_weights(form, stop));
  return std::make_unique<CpuBackend>(source.config, *host_weights,
                                      options.threads > 0 ? options.threads : default_num_threads(), isa,
                                      resolved_cpu_kv_dtype(options));
}

#if PAGEDGEN_HAVE_CUDA
// The CUDA backend keeps its KV cache in --dtype.
void check_cuda_kv_dtype(const BackendOptions& options) {
  if (options.kv_cache_dtype != "auto" && options.kv_cache_dtype != options.dtype)
    fail_setting("kv_cache_dtype", "{} with --dtype {}: the CUDA backend keeps its KV cache in --dtype; use auto or {}",
                 options.kv_cache_dtype, options.dtype, options.dtype);
}

// `files` null: dummy weights of `config`'s shape.
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options, const EngineOptions& engine,
                                           const ModelConfig& config, const ModelFiles* files, int device_index) {
  gpu::CudaBackendOptions cuda;
  cuda.device = device_index;
  cuda.dtype = *gpu::parse_device_dtype(options.dtype);  // the option's check allows only known names
  cuda.max_batch_tokens = engine.max_batch_tokens;
  cuda.max_logits_rows = engine.max_num_seqs;
  cuda.cuda_graphs = !options.no_cuda_graphs;
  check_cuda_kv_dtype(options);
  gpu::CudaBackend::check_supported(config);
  if (files == nullptr) return std::make_unique<gpu::CudaBackend>(config, kDummySeed, cuda);
  // Streamed from the file mapping, converted on the device: no host copy of the weights.
  return std::make_unique<gpu::CudaBackend>(config, files->tensors(), files->path().string(), cuda);
}
#endif

// The GPU index --device names: 0 for auto and cuda, N for cuda:N; nullopt for cpu.
std::optional<int> cuda_device_index(const std::string& device) {
  if (device == "cpu") return std::nullopt;
  if (device == "auto" || device == "cuda") return 0;
  return std::stoi(device.substr(5));  // "cuda:N", as the option's check allows
}

// The GPU to run on, or nullopt for the CPU: --device cpu, or auto with no GPU (said on
// stderr unless quiet). Throws SettingError (device) when the GPU asked for is not there.
std::optional<int> resolve_device(const BackendOptions& options, [[maybe_unused]] bool quiet) {
  const std::optional<int> index = cuda_device_index(options.device);
  if (!index) return std::nullopt;
  const bool required = options.device != "auto";
#if PAGEDGEN_HAVE_CUDA
  std::string why_none;
  bool none_installed = false;
  const std::vector<gpu::DeviceInfo> devices = gpu::list_devices(&why_none, &none_installed);
  const VisibleGpus visible{static_cast<int>(devices.size()), cuda_visible_devices_from_env()};
  if (const std::optional<std::string> beyond = gpu_index_error(options.device, *index, visible))
    fail_setting("device", "{}", *beyond);
  if (*index < visible.num_visible) return index;
  if (required)
    fail_setting("device", "{}, but no GPU is usable: {}{}; use --device cpu or auto", options.device, why_none,
                 cuda_visible_devices_note(visible));
  // A machine with no GPU at all is the common CPU case: no notice on every run then.
  if (!quiet && !none_installed) fmt::print(stderr, "pagedgen: no GPU ({}); running on the CPU\n", why_none);
#else
  if (required)
    fail_setting("device",
                 "{}, but this pagedgen was built without CUDA (the CUDA toolkit was not found at build "
                 "time)",
                 options.device);
#endif
  return std::nullopt;
}

// --device, the dtypes, the CPU math and the threads: every command that runs a backend.
void add_device_options(CLI::App& command, BackendOptions& o) {
  command
      .add_option("--device", o.device,
                  "Where to run: auto (GPU 0 when there is one, else the CPU), cuda (GPU 0), cuda:N (GPU N), cpu")
      ->capture_default_str()
      ->check([](const std::string& value) -> std::string {
        static const std::regex valid("auto|cpu|cuda|cuda:[0-9]{1,3}");
        return std::regex_match(value, valid) ? "" : "must be auto, cpu, cuda or cuda:N (N a GPU index)";
      });
  command.add_option("--dtype", o.dtype, "GPU weights, activations and KV cache: bfloat16, float16, float32")
      ->capture_default_str()
      ->check(CLI::IsMember({"bfloat16", "float16", "float32"}));
  command
      .add_option("--kv-cache-dtype", o.kv_cache_dtype,
                  "KV cache elements: auto (on the CPU float16 with --cpu-math fast, float32 with exact; on a GPU "
                  "--dtype), float32, float16, bfloat16; values are rounded once when written")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "float32", "float16", "bfloat16"}));
  command
      .add_option("--cpu-math", o.cpu_math,
                  "CPU matrix products: fast (quantized weights stay quantized, activations int8 per 32 values, "
                  "as llama.cpp) or exact (all float32, float32 KV cache: the reference that GPU --dtype float32 "
                  "output equals)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fast", "exact"}));
  command
      .add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                  "Fraction of GPU memory to fill; the KV pool takes what weights and activations leave")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 1.0));
  command.add_flag("--no-cuda-graphs", o.no_cuda_graphs,
                   "Launch every GPU decode step kernel by kernel instead of replaying a captured CUDA graph (for "
                   "debugging and comparison; the output is the same)");
  // More threads than cores only time-slice the GEMMs (and delay a signal's stop).
  const auto cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  command.add_option("--threads", o.threads, fmt::format("CPU threads, 1 to the {} cores (default: all)", cores))
      ->check(CLI::Range(1, cores));
}

// How the weights are read: the CPU instruction set, real or dummy weights, the tokenizer.
void add_weight_options(CLI::App& command, BackendOptions& o) {
  command
      .add_option("--cpu-isa", o.cpu_isa,
                  "Instruction set of the fast CPU path: auto (the best this CPU has), avx512-vnni, avx-vnni, "
                  "avx2, generic (portable C++); every choice gives the same output")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "avx512-vnni", "avx-vnni", "avx2", "generic"}));
  command
      .add_option("--load-format", o.load_format,
                  "auto: weights from the model files; dummy: -m names an HF config.json (or its directory) "
                  "and the weights are random, for throughput runs (needs --tokenizer)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "dummy"}));
  // Real weights tokenize with their own model's tokenizer: a --tokenizer there would be
  // ignored. (CLI11 stores --load-format, declared first, before it checks this option.)
  command
      .add_option("--tokenizer", o.tokenizer,
                  "With --load-format dummy: a .gguf file (any architecture; only its vocabulary is read) or HF "
                  "directory whose tokenizer and chat template to use")
      ->check([&o](const std::string&) -> std::string {
        return o.load_format == "dummy" ? ""
                                        : "applies only with --load-format dummy (real weights use their own "
                                          "model's tokenizer)";
      });
}

}  // namespace

void add_backend_options(CLI::App& command, BackendOptions& o, bool weights) {
  add_device_options(command, o);
  if (weights) add_weight_options(command, o);
}

ModelSource open_model_source(const BackendOptions& options, const std::string& model_path) {
  ModelSource source;
  if (options.load_format != "dummy") {
    source.files = std::make_unique<ModelFiles>(resolve_model_path(model_path));
    source.config = source.files->config();
    source.name = source.files->path().string();
    return source;
  }
  if (model_path.empty())
    fail("--load-format dummy needs -m CONFIG.json (an HF config, e.g. samples/llama-3-8b.config.json)");
  if (options.tokenizer.empty())
    fail(
        "--load-format dummy needs --tokenizer MODEL (a .gguf file or HF directory) to tokenize prompts and decode "
        "output");
  source.dummy = true;
  source.config = dummy_model_config(model_path);
  // Only the vocabulary is read, so a file of any architecture (or a vocabulary-only one) works.
  source.dummy_vocabulary = std::make_unique<ModelVocabulary>(options.tokenizer);
  source.name = "dummy:" + model_path;
  const int32_t tokenizer_vocab = source.dummy_vocabulary->tokenizer().vocab_size();
  if (tokenizer_vocab > source.config.vocab_size)
    fail("--tokenizer '{}' has {} tokens, more than the dummy model's vocabulary of {}", options.tokenizer,
         tokenizer_vocab, source.config.vocab_size);
  return source;
}

ChosenBackend make_backend(const BackendOptions& options, const EngineOptions& engine, const ModelSource& source,
                           int32_t block_size, bool quiet, const StopToken& stop) {
  ChosenBackend chosen;
  const std::optional<int> gpu = resolve_device(options, quiet);
  if (!gpu) {
    chosen.backend = make_cpu_backend(options, source, chosen.host_weights, stop);
  } else {
#if PAGEDGEN_HAVE_CUDA
    chosen.backend = make_cuda_backend(options, engine, source.config, source.files.get(), *gpu);
    if (!quiet) fmt::print(stderr, "pagedgen: running on cuda:{}, {}\n", *gpu, chosen.backend->device());
#endif
  }
  chosen.device = chosen.backend->device();
  chosen.num_blocks = chosen.backend->kv_pool_blocks(kv_pool_budget(engine, options.gpu_memory_utilization),
                                                     static_cast<std::size_t>(block_size));
  return chosen;
}

std::unique_ptr<Backend> make_sizing_backend(const BackendOptions& options, const EngineOptions& engine,
                                             const ModelConfig& config, bool quiet) {
  const std::optional<int> gpu = resolve_device(options, quiet);
#if PAGEDGEN_HAVE_CUDA
  if (gpu) return make_cuda_backend(options, engine, config, nullptr, *gpu);
#else
  (void)engine;
  (void)gpu;
#endif
  return std::make_unique<DryRunBackend>(config.kv_bytes_per_token(kv_dtype_bytes(resolved_cpu_kv_dtype(options))),
                                         config.kv_kinds());
}

KvDtype resolved_cpu_kv_dtype(const BackendOptions& options) {
  if (options.kv_cache_dtype == "auto") return options.cpu_math == "fast" ? KvDtype::kFloat16 : KvDtype::kFloat32;
  return *parse_kv_dtype(options.kv_cache_dtype);  // the option's check allows only known names
}

UnsupportedSampling unsupported_sampling(const Backend& backend) {
  const std::string where =
      fmt::format("{}{}", backend.name(), backend.device().empty() ? "" : fmt::format(" ({})", backend.device()));
  UnsupportedSampling unsupported;
  if (!backend.applies_token_masks())
    unsupported.token_masks = fmt::format(
        "structured outputs (response_format, --json-schema, --json-object) and allowed_token_ids need a "
        "backend that applies token masks, and this run's ({}) does not: run it "
        "with --device cpu, or remove them",
        where);
  if (!backend.applies_penalties())
    unsupported.penalties = fmt::format(
        "presence_penalty, frequency_penalty, repetition_penalty and logit_bias need a "
        "backend that applies them, and this run's ({}) does not: run it with "
        "--device cpu, or remove them",
        where);
  if (!backend.computes_logprobs())
    unsupported.logprobs = fmt::format(
        "logprobs need a backend that computes them, and this run's ({}) does not: "
        "run it with --device cpu, or remove logprobs",
        where);
  return unsupported;
}

}  // namespace pagedgen::app
