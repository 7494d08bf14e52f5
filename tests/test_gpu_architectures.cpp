// The CUDA backend on the architectures beyond the Llama block, against the CPU backend on
// the same random weights (model/dummy_weights.h) of small shapes the GPU kernels take
// (head dims 64, 96 and 256; the tiny reference files of tests/data/arch-reference, whose
// heads are 8 to 24 wide, are the CPU's check against llama.cpp):
//   qwen3           q/k norms
//   phi3            fused QKV and gate/up tensors in the file (split at upload), head dim 96, no GQA
//   gemma2          embedding scale, GeGLU, post norms, a query scale of its own, attention and
//                   final logit soft-caps, a sliding window on even layers (two layer kinds)
//   gemma3          q/k and post norms, GeGLU, a window on 5 of 6 layers with its own RoPE base,
//                   linear RoPE scaling on the global layers (two layer kinds), head dim 256
//   mistral-window  every layer with a window (one kind: nothing given back)
// float32: last-token logits within the tolerance of test_gpu_backend at every step of a
// chunked prefill and decodes over contexts past the window and past one attention
// partition, with the window kinds' block tables on their own (scrambled) ids and the
// blocks below every window given back (table entries 0); bfloat16 and float16: the same
// steps run and the logits follow the CPU's. The engine on both backends (window kinds
// sized and released by the engine, prefix sharing on): the same greedy tokens up to a
// near-tie. Skips without a GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <variant>

#include "cpu/cpu_backend.h"
#include "cuda_backend.h"
#include "engine/engine.h"
#include "engine/run_to_completion.h"
#include "gpu_test_device.h"
#include "gpu_test_model.h"
#include "logits_compare.h"
#include "model/dummy_weights.h"
#include "model/model_weights.h"
#include "paged_batch_builder.h"

using namespace pagedgen;
using test::correlation;
using test::max_abs_diff;

namespace {

// As test_gpu_backend: float32 on both sides, other summation orders on the GPU.
constexpr float kLogitTolerance = 2e-3f;
// A greedy token may differ only where the CPU's best two logits are this close.
constexpr float kNearTie = 2e-3f;
// Past one attention partition (256 positions) and shorter than the prompts.
constexpr int64_t kWindow = 300;
constexpr uint64_t kSeed = 7;

ModelConfig base_config(const char* architecture) {
  ModelConfig c;
  c.architecture = architecture;
  c.name = std::string("gpu test ") + architecture;
  c.num_layers = 6;
  c.hidden_size = 256;
  c.intermediate_size = 512;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.rope_dim = 64;
  c.vocab_size = 1024;
  c.context_length = 2048;
  c.rms_norm_eps = 1e-6f;
  c.rope_layout = RopeLayout::HalfSplit;
  return c;
}

void add_window(ModelConfig& c, auto&& has_window) {
  c.sliding_window = kWindow;
  c.window_layers.clear();
  for (int64_t l = 0; l < c.num_layers; ++l) c.window_layers.push_back(has_window(l));
}

ModelConfig arch_config(const std::string& name) {
  if (name == "qwen3") {
    ModelConfig c = base_config("qwen3");
    c.qk_norm = true;
    c.rope_theta = 1e6f;
    c.tied_embeddings = true;
    return c;
  }
  if (name == "phi3") {
    ModelConfig c = base_config("phi3");
    c.hidden_size = 384;
    c.num_kv_heads = 4;
    c.head_dim = 96;
    c.rope_dim = 96;
    return c;
  }
  if (name == "gemma2" || name == "gemma3") {
    ModelConfig c = base_config(name.c_str());
    c.tied_embeddings = true;
    c.post_norms = true;
    c.embedding_scale = std::sqrt(static_cast<float>(c.hidden_size));
    c.activation = MlpActivation::kGeluTanh;
    if (name == "gemma2") {
      c.attention_scale = 0.1f;
      c.attn_logit_softcap = 50.0f;
      c.final_logit_softcap = 30.0f;
      add_window(c, [](int64_t l) { return l % 2 == 0; });
      c.window_rope_theta = c.rope_theta;
    } else {
      // Gemma 3's head dimension: its window layers on the CUDA-core kernel at 256, its
      // global ones on the tensor-core kernel in bfloat16/float16.
      c.head_dim = 256;
      c.rope_dim = 256;
      c.qk_norm = true;
      c.rope_theta = 1e6f;
      c.rope_linear_factor = 8.0f;
      add_window(c, [](int64_t l) { return l % 6 != 5; });
      c.window_rope_theta = 10000.0f;
    }
    return c;
  }
  REQUIRE(name == "mistral-window");
  ModelConfig c = base_config("mistral");
  add_window(c, [](int64_t) { return true; });
  return c;
}

const char* const kArchitectures[] = {"qwen3", "phi3", "gemma2", "gemma3", "mistral-window"};

// The dummy weights on the host and as the tensors of a model file; Phi-3's hold its fused
// attn_qkv and gate/up ffn_up tensors, as llama.cpp's converter writes them.
struct ArchModel {
  std::string name;
  ModelConfig config;
  ModelWeights weights;
  std::vector<RawTensor> tensors;
  std::vector<std::vector<float>> fused;  // the fused tensors' values

  explicit ArchModel(const std::string& arch_name) : name(arch_name), config(arch_config(arch_name)) {
    validate_model_config(config, name);
    weights = make_dummy_weights(config, kSeed);
    tensors = test::dummy_raw_tensors(config, weights);
    if (config.architecture == "phi3") fuse_phi3_tensors();
  }

 private:
  void fuse_phi3_tensors() {
    const auto hidden = static_cast<uint64_t>(config.hidden_size);
    std::vector<RawTensor> kept;
    fused.reserve(2 * static_cast<std::size_t>(config.num_layers));
    for (std::size_t l = 0; l < weights.layers.size(); ++l) {
      const LayerWeights& w = weights.layers[l];
      const auto q = static_cast<std::size_t>(config.num_heads * config.head_dim) * hidden;
      const auto kv = static_cast<std::size_t>(config.num_kv_heads * config.head_dim) * hidden;
      const auto ffn = static_cast<std::size_t>(config.intermediate_size) * hidden;
      std::vector<float>& qkv = fused.emplace_back(w.wq, w.wq + q);
      qkv.insert(qkv.end(), w.wk, w.wk + kv);
      qkv.insert(qkv.end(), w.wv, w.wv + kv);
      std::vector<float>& gate_up = fused.emplace_back(w.w_gate, w.w_gate + ffn);
      gate_up.insert(gate_up.end(), w.w_up, w.w_up + ffn);
    }
    for (const RawTensor& t : tensors) {
      const bool part = t.name.ends_with(".attn_q.weight") || t.name.ends_with(".attn_k.weight") ||
                        t.name.ends_with(".attn_v.weight") || t.name.ends_with(".ffn_gate.weight") ||
                        t.name.ends_with(".ffn_up.weight");
      if (!part) kept.push_back(t);
    }
    for (std::size_t l = 0; l < weights.layers.size(); ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      for (const auto& [name, values] :
           {std::pair{p + "attn_qkv.weight", &fused[2 * l]}, std::pair{p + "ffn_up.weight", &fused[2 * l + 1]}})
        kept.push_back({name,
                        name,
                        {values->size() / hidden, hidden},
                        static_cast<uint32_t>(GgmlType::F32),
                        {reinterpret_cast<const std::byte*>(values->data()), values->size() * sizeof(float)}});
    }
    tensors = std::move(kept);
  }
};

std::unique_ptr<gpu::CudaBackend> cuda_backend(const ArchModel& m, gpu::DeviceDtype dtype) {
  gpu::CudaBackendOptions options;
  options.dtype = dtype;
  options.max_batch_tokens = 512;
  options.max_logits_rows = 4;
  return std::make_unique<gpu::CudaBackend>(m.config, m.tensors, m.name, options);
}

// A block id of kind 1 for kind 0's id b: another id of the same pool, so a kernel that
// reads kind 0's table for a window layer reads the wrong block.
int32_t kind1_block(int32_t b, int32_t num_blocks) { return (b * 7 + 3) % num_blocks; }

// `batch` with kind 1's tables added for a model of two kinds: kind 0's ids moved by
// kind1_block, and the entries of blocks wholly below every window of the step's queries
// of each sequence set to 0, as the engine gives them back.
void add_window_kind(StepBatch& batch, int32_t num_blocks) {
  KindTables kind;
  for (int64_t slot : batch.slot_mapping) {
    const auto block = static_cast<int32_t>(slot / batch.block_size);
    kind.slot_mapping.push_back(int64_t{kind1_block(block, num_blocks)} * batch.block_size + slot % batch.block_size);
  }
  for (int32_t s = 0; s < batch.num_seqs; ++s) {
    const int32_t first_query_position = batch.positions[static_cast<std::size_t>(batch.query_start[s])];
    const int64_t lowest_reached = std::max<int64_t>(0, first_query_position - kWindow + 1);
    for (int32_t b = 0; b < batch.max_blocks_per_seq; ++b) {
      const int32_t id = batch.block_tables[static_cast<std::size_t>(s * batch.max_blocks_per_seq + b)];
      const bool given_back = int64_t{b + 1} * batch.block_size <= lowest_reached;
      kind.block_tables.push_back(given_back ? 0 : kind1_block(id, num_blocks));
    }
  }
  batch.window_kinds.push_back(std::move(kind));
}

void allocate(LogitsBackend& backend, const ModelConfig& config, int32_t num_blocks, int32_t block_size) {
  if (config.kv_kinds().size() == 1) {
    backend.allocate_kv_pool(static_cast<std::size_t>(num_blocks), static_cast<std::size_t>(block_size));
    return;
  }
  const int32_t kinds[] = {num_blocks, num_blocks};
  backend.allocate_kv_pools(kinds, static_cast<std::size_t>(block_size));
}

// The logits of each step of: a 420-token prefill of sequence 0 and a 130-token one of
// sequence 1, then sequence 0's next 300 tokens beside sequence 1's decode, then three
// decodes of both (contexts to 723 positions: three partitions, the window's start past
// the first two blocks of 16).
std::vector<std::vector<float>> run_steps(LogitsBackend& backend, const ModelConfig& config, int32_t block_size) {
  const int32_t num_blocks = 2048 / block_size + 8;
  allocate(backend, config, num_blocks, block_size);
  test::PagedBatchBuilder builder(block_size, num_blocks, 5u);
  const std::size_t a = builder.add_sequence(), b = builder.add_sequence();
  auto tokens = [&](std::size_t n, int32_t offset) {
    std::vector<int32_t> ids(n);
    for (std::size_t i = 0; i < n; ++i)
      ids[i] = static_cast<int32_t>((i * 37 + static_cast<std::size_t>(offset)) % 1000);
    return ids;
  };
  const std::vector<std::vector<std::pair<std::size_t, std::vector<int32_t>>>> steps = {
      {{a, tokens(420, 1)}, {b, tokens(130, 2)}},
      {{a, tokens(300, 3)}, {b, {11}}},
      {{a, {12}}, {b, {13}}},
      {{a, {14}}, {b, {15}}},
      {{b, {16}}, {a, {17}}}};
  std::vector<std::vector<float>> out;
  for (const auto& step : steps) {
    StepBatch batch = builder.step(step);
    if (config.kv_kinds().size() > 1) add_window_kind(batch, num_blocks);
    std::vector<float> logits(batch.logits_rows.size() * static_cast<std::size_t>(config.vocab_size));
    backend.forward(batch, logits);
    out.push_back(std::move(logits));
  }
  return out;
}

// Request i's prompt: a 360-token prefix all requests share, then 40 * i tokens of its own.
std::vector<int32_t> request_prompt(int32_t i) {
  std::vector<int32_t> prompt;
  for (int32_t t = 0; t < 360 + 40 * i; ++t) prompt.push_back(t < 360 ? (t * 13) % 1000 : (t * 29 + i) % 1000);
  return prompt;
}

// Greedy completions of the requests, on the engine.
std::vector<std::vector<int32_t>> engine_greedy(Backend& backend, int32_t num_requests, int32_t max_tokens) {
  std::vector<PreparedRequest> requests;
  for (int32_t i = 0; i < num_requests; ++i) {
    PreparedRequest r;
    r.index = static_cast<std::size_t>(i);
    r.seed_key = std::to_string(i);
    r.prompt_ids = request_prompt(i);
    r.sampling.temperature = 0;
    r.sampling.max_tokens = max_tokens;
    r.sampling.ignore_eos = true;
    requests.push_back(r);
  }
  EngineConfig config;
  config.block_size = 16;
  config.num_blocks = 256;
  config.max_batch_tokens = 256;  // chunked prefill
  config.max_model_len = 2048;
  Engine engine(config, backend, nullptr);
  engine.add_requests(requests);
  std::vector<std::vector<int32_t>> out(requests.size());
  for (const OutputRecord& record : run_to_completion(engine)) {
    REQUIRE(std::holds_alternative<RequestOutput>(record));
    const auto& output = std::get<RequestOutput>(record);
    out[output.index] = output.choices.at(0).token_ids;
  }
  return out;
}

// The CPU's best-minus-second logit at each of `completion`'s steps after `prompt`.
std::vector<float> cpu_margins(CpuBackend& cpu, const std::vector<int32_t>& prompt,
                               const std::vector<int32_t>& completion, int64_t vocab) {
  cpu.allocate_kv_pool(200, 16);
  test::PagedBatchBuilder builder(16, 200, 9u);
  const std::size_t seq = builder.add_sequence();
  std::vector<float> logits(static_cast<std::size_t>(vocab));
  cpu.forward(builder.step({{seq, prompt}}), logits);
  std::vector<float> margins;
  for (int32_t token : completion) {
    std::vector<float> sorted = logits;
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
    margins.push_back(sorted[0] - sorted[1]);
    cpu.forward(builder.step({{seq, {token}}}), logits);
  }
  return margins;
}

}  // namespace

TEST_CASE("float32: each architecture's logits near the CPU backend's, window kinds on their own block ids") {
  REQUIRE_GPU();
  for (const std::string arch : kArchitectures) {
    CAPTURE(arch);
    const ArchModel m(arch);
    CpuBackend cpu(m.config, m.weights);
    const std::unique_ptr<gpu::CudaBackend> gpu = cuda_backend(m, gpu::DeviceDtype::F32);
    CHECK(gpu->kv_kind_windows() == cpu.kv_kind_windows());
    for (int32_t block_size : {16, 1}) {
      CAPTURE(block_size);
      const std::vector<std::vector<float>> expected = run_steps(cpu, m.config, block_size);
      const std::vector<std::vector<float>> got = run_steps(*gpu, m.config, block_size);
      for (std::size_t step = 0; step < expected.size(); ++step) {
        CAPTURE(step);
        CHECK(max_abs_diff(got[step], expected[step]) <= kLogitTolerance);
      }
    }
  }
}

TEST_CASE("bfloat16 and float16: each architecture runs and its logits follow the CPU backend's") {
  REQUIRE_GPU();
  for (const std::string arch : kArchitectures) {
    CAPTURE(arch);
    const ArchModel m(arch);
    CpuBackend cpu(m.config, m.weights);
    const std::vector<std::vector<float>> expected = run_steps(cpu, m.config, 16);
    for (const gpu::DeviceDtype dtype : {gpu::DeviceDtype::BF16, gpu::DeviceDtype::F16}) {
      CAPTURE(gpu::device_dtype_name(dtype));
      const std::unique_ptr<gpu::CudaBackend> gpu = cuda_backend(m, dtype);
      const std::vector<std::vector<float>> got = run_steps(*gpu, m.config, 16);
      for (std::size_t step = 0; step < expected.size(); ++step) {
        CAPTURE(step);
        REQUIRE(std::ranges::all_of(got[step], [](float v) { return std::isfinite(v); }));
        // bfloat16 weights, activations and KV round every value to 8 bits of mantissa,
        // float16 to 11.
        const double r = correlation(got[step], expected[step]);
        MESSAGE("correlation with the CPU's logits " << r);
        CHECK(r > 0.95);
      }
    }
  }
}

TEST_CASE("engine, float32: the same greedy tokens as on the CPU up to a near-tie, window blocks given back") {
  REQUIRE_GPU();
  for (const std::string arch : {"gemma3", "gemma2", "mistral-window"}) {
    CAPTURE(arch);
    const ArchModel m(arch);
    CpuBackend cpu(m.config, m.weights);
    const std::unique_ptr<gpu::CudaBackend> gpu = cuda_backend(m, gpu::DeviceDtype::F32);
    constexpr int32_t kRequests = 4, kMaxTokens = 24;
    const std::vector<std::vector<int32_t>> expected = engine_greedy(cpu, kRequests, kMaxTokens);
    const std::vector<std::vector<int32_t>> got = engine_greedy(*gpu, kRequests, kMaxTokens);
    std::size_t compared = 0;
    for (int32_t i = 0; i < kRequests; ++i) {
      CAPTURE(i);
      REQUIRE(got[static_cast<std::size_t>(i)].size() == static_cast<std::size_t>(kMaxTokens));
      CpuBackend reference(m.config, m.weights);
      const std::vector<float> margins =
          cpu_margins(reference, request_prompt(i), expected[static_cast<std::size_t>(i)], m.config.vocab_size);
      for (std::size_t step = 0; step < margins.size(); ++step) {
        if (margins[step] < kNearTie) break;  // past a near-tie either token is right
        CHECK(got[static_cast<std::size_t>(i)][step] == expected[static_cast<std::size_t>(i)][step]);
        ++compared;
      }
    }
    MESSAGE(arch << ": " << compared << " of " << kRequests * kMaxTokens << " tokens compared");
    CHECK(compared >= kRequests * kMaxTokens / 2);
  }
}
