// CpuBackend on the default model: logits and K/V are the same bits at every block size
// (scrambled block ids), for any prefill chunking, alone or batched, on 1 or 2 threads;
// close to the dense reference forward pass; greedy tokens equal to it; copy_blocks exact.
// The fast path (weights kept quantized, float16 and bfloat16 KV) likewise at block sizes
// 1-64, any chunking, batched, on 1, 2 and 4 threads and every instruction set; float16 and
// bfloat16 matrices kept as stored give the bits of their float32 form.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "cpu/cpu_backend.h"
#include "dense_forward.h"
#include "loaded_model.h"
#include "logits_compare.h"
#include "loader/model_files.h"
#include "model/dequant.h"
#include "model/model_weights.h"
#include "paged_batch_builder.h"
#include "test_paths.h"
#include "util/half.h"

using namespace pagedgen;

namespace {

// `pagedgen tokenize "The history of the printing press begins in the fifteenth century, when
// Johannes Gutenberg combined movable metal type, oil-based ink and a wooden press adapted from
// wine making. Within fifty years, presses were running in"` (41 tokens)
const std::vector<int32_t> kPrompt = {504,   1463,  282,   260,   7510,  1757,  5634, 281,  260,  35561, 2070,
                                      28,    645,   28322, 45382, 5276,  39245, 4718, 1502, 28,   2664,  29,
                                      2542,  12923, 284,   253,   10091, 1757,  9309, 429,  8289, 1625,  30,
                                      10043, 13869, 929,   28,    32422, 592,   4108, 281};
// "Paris is the capital of"
const std::vector<int32_t> kShortPrompt = {38634, 314, 260, 3575, 282};

using test::LoadedModel;

const LoadedModel* model() { return test::loaded_default_model(); }

#define REQUIRE_MODEL()                                                                    \
  const LoadedModel* loaded = model();                                                     \
  if (loaded == nullptr) {                                                                 \
    MESSAGE("skipped: the default model is absent (scripts/fetch-model.sh downloads it)"); \
    return;                                                                                \
  }                                                                                        \
  [[maybe_unused]] const ModelConfig& config = loaded->files.config()

std::size_t vocab_of(const ModelConfig& config) { return static_cast<std::size_t>(config.vocab_size); }

// One forward step; returns the logits of every row the batch asks for.
std::vector<float> run_step(CpuBackend& backend, const StepBatch& batch, std::size_t vocab) {
  std::vector<float> logits(batch.logits_rows.size() * vocab);
  backend.forward(batch, logits);
  return logits;
}

// Every layer's K then V of positions [0, num_tokens) of a sequence, read through its block
// table: (layer, K|V, position, kv head, dim).
std::vector<float> gather_kv(const CpuBackend& backend, const test::PagedBatchBuilder& builder, std::size_t seq,
                             std::size_t num_layers) {
  const KvLayout layout = backend.kv_layout();
  std::vector<float> out;
  for (std::size_t layer = 0; layer < num_layers; ++layer)
    for (const std::span<const float> pool : {backend.k_pool(layer), backend.v_pool(layer)})
      for (std::size_t pos = 0; pos < builder.num_tokens(seq); ++pos) {
        const KvSlot slot =
            position_slot(builder.block_table(seq).data(), static_cast<int64_t>(pos), layout.block_size);
        for (int64_t h = 0; h < layout.num_kv_heads; ++h) {
          const auto begin = pool.begin() + layout.offset(slot.block_id, h, slot.slot_in_block, 0);
          out.insert(out.end(), begin, begin + layout.head_dim);
        }
      }
  return out;
}

using test::same_bits;

std::vector<float> last_row(const std::vector<float>& logits, std::size_t vocab) {
  return std::vector<float>(logits.end() - static_cast<std::ptrdiff_t>(vocab), logits.end());
}

// The prompt prefilled in chunks of `chunk` tokens on a fresh backend; returns the logits of
// each chunk's last token, concatenated, and (through kv, float32 pools only) the prompt's K/V.
std::vector<float> prefill_in_chunks(const LoadedModel& m, int32_t block_size, std::size_t chunk,
                                     std::size_t num_threads, std::vector<float>* kv = nullptr,
                                     cpu::CpuIsa isa = cpu::best_cpu_isa(), KvDtype kv_dtype = KvDtype::kFloat32) {
  const ModelConfig& config = m.files.config();
  CpuBackend backend(config, m.weights, num_threads, isa, kv_dtype);
  backend.allocate_kv_pool(64, static_cast<std::size_t>(block_size));
  test::PagedBatchBuilder builder(block_size, 64, 1000u + static_cast<uint32_t>(block_size));
  const std::size_t seq = builder.add_sequence();
  std::vector<float> logits;
  for (std::size_t start = 0; start < kPrompt.size(); start += chunk) {
    const std::size_t end = std::min(kPrompt.size(), start + chunk);
    const StepBatch batch =
        builder.step({{seq, std::vector<int32_t>(kPrompt.begin() + static_cast<std::ptrdiff_t>(start),
                                                 kPrompt.begin() + static_cast<std::ptrdiff_t>(end))}});
    const auto step_logits = run_step(backend, batch, vocab_of(config));
    logits.insert(logits.end(), step_logits.begin(), step_logits.end());
  }
  if (kv != nullptr) *kv = gather_kv(backend, builder, seq, static_cast<std::size_t>(config.num_layers));
  return logits;
}

}  // namespace

TEST_CASE("(a) last-token logits are the same bits at block sizes 1, 8, 16, 32 and near the dense reference") {
  REQUIRE_MODEL();
  const std::size_t vocab = vocab_of(config);
  const auto at_bs16 = prefill_in_chunks(*loaded, 16, kPrompt.size(), 2);
  REQUIRE(at_bs16.size() == vocab);
  for (int32_t block_size : {1, 8, 32}) {
    CAPTURE(block_size);
    CHECK(same_bits(prefill_in_chunks(*loaded, block_size, kPrompt.size(), 2), at_bs16));
  }

  DenseForward dense(config, loaded->weights, kPrompt.size());
  const std::vector<float> reference = dense.forward(kPrompt);
  REQUIRE(reference.size() == vocab);
  double max_diff = 0.0;
  for (std::size_t i = 0; i < vocab; ++i) max_diff = std::max(max_diff, std::abs(double{at_bs16[i]} - reference[i]));
  MESSAGE("max |paged - dense| over the last token's logits: " << max_diff << " (tolerance 1e-3)");
  CHECK(max_diff <= 1e-3);
}

TEST_CASE("(b) one chunk, chunks of 7 and one token at a time give the same logits and K/V bits") {
  REQUIRE_MODEL();
  const std::size_t vocab = vocab_of(config);
  std::vector<float> kv_whole, kv_chunked, kv_single;
  const auto whole = prefill_in_chunks(*loaded, 8, kPrompt.size(), 2, &kv_whole);
  const auto chunked = prefill_in_chunks(*loaded, 8, 7, 2, &kv_chunked);
  const auto single = prefill_in_chunks(*loaded, 8, 1, 2, &kv_single);
  REQUIRE(single.size() == kPrompt.size() * vocab);
  CHECK(same_bits(last_row(chunked, vocab), whole));
  CHECK(same_bits(last_row(single, vocab), whole));
  // Each chunk's last token (positions 6, 13, 20, ...) against the token-at-a-time run.
  for (std::size_t c = 0; c * 7 < kPrompt.size(); ++c) {
    const std::size_t pos = std::min(kPrompt.size(), c * 7 + 7) - 1;
    CAPTURE(pos);
    CHECK(same_bits(std::span(chunked).subspan(c * vocab, vocab), std::span(single).subspan(pos * vocab, vocab)));
  }
  REQUIRE(kv_whole.size() == static_cast<std::size_t>(config.kv_elements_per_token()) * kPrompt.size());
  CHECK(same_bits(kv_chunked, kv_whole));
  CHECK(same_bits(kv_single, kv_whole));
}

TEST_CASE("(c) two sequences batched together give the same logits bits as each alone") {
  REQUIRE_MODEL();
  const std::size_t vocab = vocab_of(config);
  auto alone = [&](const std::vector<int32_t>& prompt) {
    CpuBackend backend(config, loaded->weights, 2);
    backend.allocate_kv_pool(64, 16);
    test::PagedBatchBuilder builder(16, 64, 5);
    const std::size_t seq = builder.add_sequence();
    return run_step(backend, builder.step({{seq, prompt}}), vocab);
  };
  const auto long_alone = alone(kPrompt);
  const auto short_alone = alone(kShortPrompt);

  CpuBackend backend(config, loaded->weights, 2);
  backend.allocate_kv_pool(64, 16);
  test::PagedBatchBuilder builder(16, 64, 6);
  const std::size_t a = builder.add_sequence();
  const std::size_t b = builder.add_sequence();
  // Short first, so the long prompt's rows sit at a different place in the batch.
  const auto both = run_step(backend, builder.step({{b, kShortPrompt}, {a, kPrompt}}), vocab);
  REQUIRE(both.size() == 2 * vocab);
  CHECK(same_bits(std::span(both).first(vocab), short_alone));
  CHECK(same_bits(std::span(both).subspan(vocab), long_alone));

  // Next step: a decodes one token while b prefills more; a's logits match a lone decode.
  const int32_t next = 30;  // "."
  const auto mixed = run_step(backend, builder.step({{a, {next}}, {b, kPrompt}}), vocab);
  CpuBackend lone(config, loaded->weights, 2);
  lone.allocate_kv_pool(64, 16);
  test::PagedBatchBuilder lone_builder(16, 64, 7);
  const std::size_t s = lone_builder.add_sequence();
  run_step(lone, lone_builder.step({{s, kPrompt}}), vocab);
  const auto lone_decode = run_step(lone, lone_builder.step({{s, {next}}}), vocab);
  CHECK(same_bits(std::span(mixed).first(vocab), lone_decode));
}

TEST_CASE("(d) 1 and 2 threads give the same logits and K/V bits") {
  REQUIRE_MODEL();
  std::vector<float> kv1, kv2;
  const auto one = prefill_in_chunks(*loaded, 16, 9, 1, &kv1);
  const auto two = prefill_in_chunks(*loaded, 16, 9, 2, &kv2);
  CHECK(same_bits(one, two));
  CHECK(same_bits(kv1, kv2));
}

TEST_CASE("(e) copy_blocks copies exactly the blocks asked, in order, in every layer") {
  REQUIRE_MODEL();
  CpuBackend backend(config, loaded->weights, 2);
  const std::size_t num_blocks = 8, block_size = 4;
  backend.allocate_kv_pool(num_blocks, block_size);
  CHECK(backend.kv_bytes_per_block(block_size) ==
        static_cast<std::size_t>(2 * config.num_layers * config.num_kv_heads * config.head_dim) * block_size * 4);
  const auto layers = static_cast<std::size_t>(config.num_layers);
  // Sentinels: every element distinct across layers, K and V.
  auto sentinel = [&](std::size_t layer, std::size_t kv, std::size_t i) {
    return static_cast<float>((layer * 2 + kv) * 1000003 + i);
  };
  for (std::size_t layer = 0; layer < layers; ++layer) {
    auto k = backend.k_pool(layer);
    auto v = backend.v_pool(layer);
    for (std::size_t i = 0; i < k.size(); ++i) {
      k[i] = sentinel(layer, 0, i);
      v[i] = sentinel(layer, 1, i);
    }
  }
  // 2 -> 5, then 5 -> 6 (so 6 gets block 2's data: copies run in order), and 7 -> 0.
  const std::vector<BlockCopy> copies = {{2, 5}, {5, 6}, {7, 0}};
  backend.copy_blocks(copies);
  const auto block_elements = static_cast<std::size_t>(backend.kv_layout().block_stride());
  // Where each block's content now comes from.
  const std::size_t source_of[] = {7, 1, 2, 3, 4, 2, 2, 7};
  std::size_t mismatches = 0;
  for (std::size_t layer = 0; layer < layers; ++layer)
    for (std::size_t kv = 0; kv < 2; ++kv) {
      const auto pool = kv == 0 ? backend.k_pool(layer) : backend.v_pool(layer);
      for (std::size_t block = 0; block < num_blocks; ++block)
        for (std::size_t e = 0; e < block_elements; ++e)
          if (pool[block * block_elements + e] != sentinel(layer, kv, source_of[block] * block_elements + e))
            ++mismatches;
    }
  CHECK(mismatches == 0);
}

TEST_CASE("(f) 16 greedy steps through the paged backend equal the dense reference's tokens") {
  REQUIRE_MODEL();
  const std::size_t vocab = vocab_of(config);
  const std::size_t num_steps = 16;
  DenseForward dense(config, loaded->weights, kPrompt.size() + num_steps);
  const std::vector<TokenId> expected = greedy_decode(dense, kPrompt, num_steps);

  CpuBackend backend(config, loaded->weights, 2);
  backend.allocate_kv_pool(32, 8);
  test::PagedBatchBuilder builder(8, 32, 11);
  const std::size_t seq = builder.add_sequence();
  std::vector<float> logits = run_step(backend, builder.step({{seq, kPrompt}}), vocab);
  std::vector<TokenId> tokens;
  for (std::size_t step = 0; step < num_steps; ++step) {
    const auto best = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    tokens.push_back(best);
    if (step + 1 < num_steps) logits = run_step(backend, builder.step({{seq, {best}}}), vocab);
  }
  CHECK(tokens == expected);
}

TEST_CASE(
    "(g) fast path: the same logits bits at block sizes 1-64, any chunking, batching, 1, 2 and 4 threads, "
    "every instruction set, float16 and bfloat16 KV") {
  const LoadedModel* packed = test::loaded_default_model(WeightForm::kPackedWhereQuantized);
  if (packed == nullptr) {
    MESSAGE("skipped: the default model is absent (scripts/fetch-model.sh downloads it)");
    return;
  }
  const ModelConfig& config = packed->files.config();
  const std::size_t vocab = vocab_of(config);
  for (const KvDtype kv_dtype : {KvDtype::kFloat16, KvDtype::kBFloat16}) {
    CAPTURE(kv_dtype_name(kv_dtype));
    auto prefill = [&](int32_t block_size, std::size_t chunk, std::size_t threads, cpu::CpuIsa isa) {
      return prefill_in_chunks(*packed, block_size, chunk, threads, nullptr, isa, kv_dtype);
    };
    const auto reference = prefill(16, 9, 2, cpu::best_cpu_isa());  // chunks of 9: last tokens at 8, 17, ...
    const auto reference_last = last_row(reference, vocab);
    for (int32_t block_size : {1, 8, 32, 64}) {
      CAPTURE(block_size);
      CHECK(same_bits(prefill(block_size, 9, 2, cpu::best_cpu_isa()), reference));
    }
    CHECK(same_bits(last_row(prefill(16, kPrompt.size(), 2, cpu::best_cpu_isa()), vocab), reference_last));
    CHECK(same_bits(last_row(prefill(16, 1, 2, cpu::best_cpu_isa()), vocab), reference_last));
    for (std::size_t threads : {1, 4}) {
      CAPTURE(threads);
      CHECK(same_bits(prefill(16, 9, threads, cpu::best_cpu_isa()), reference));
    }
    for (cpu::CpuIsa isa : cpu::supported_cpu_isas()) {
      CAPTURE(cpu::cpu_isa_name(isa));
      CHECK(same_bits(prefill(8, 9, 2, isa), reference));
    }
    // Batched with another sequence, rows elsewhere in the batch.
    CpuBackend backend(config, packed->weights, 2, cpu::best_cpu_isa(), kv_dtype);
    backend.allocate_kv_pool(64, 16);
    test::PagedBatchBuilder builder(16, 64, 6);
    const std::size_t a = builder.add_sequence();
    const std::size_t b = builder.add_sequence();
    const auto both = run_step(backend, builder.step({{b, kShortPrompt}, {a, kPrompt}}), vocab);
    CHECK(same_bits(std::span(both).subspan(vocab), reference_last));
  }
  // The KV element type changes the numbers (each is a different rounding of K and V).
  CHECK(!same_bits(prefill_in_chunks(*packed, 16, 9, 2, nullptr, cpu::best_cpu_isa(), KvDtype::kFloat16),
                   prefill_in_chunks(*packed, 16, 9, 2, nullptr, cpu::best_cpu_isa(), KvDtype::kBFloat16)));
}

TEST_CASE("(h) float16 / bfloat16 matrices kept as stored give the bits of their float32 form, in half the memory") {
  REQUIRE_MODEL();
  const std::size_t vocab = vocab_of(config);
  // The default model's tensors with every matrix rewritten as F16 (then BF16); the 1-D
  // norm weights stay F32.
  for (const GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
    CAPTURE(ggml_type_name(type));
    std::vector<RawTensor> tensors = loaded->files.tensors();
    std::vector<std::vector<uint16_t>> storage;
    for (RawTensor& t : tensors) {
      if (t.shape.size() != 2) continue;
      std::vector<float> values(t.shape[0] * t.shape[1]);
      dequantize(static_cast<GgmlType>(t.raw_type), t.data, values);
      std::vector<uint16_t>& bits = storage.emplace_back(values.size());
      for (std::size_t i = 0; i < values.size(); ++i)
        bits[i] = type == GgmlType::F16 ? float_to_half(values[i]) : float_to_bfloat16(values[i]);
      t.raw_type = static_cast<uint32_t>(type);
      t.data = std::as_bytes(std::span(bits));
    }
    const ModelWeights float32 = load_model_weights(config, tensors, "f16 test", WeightForm::kFloat32);
    const ModelWeights kept = load_model_weights(config, tensors, "f16 test", WeightForm::kPackedWhereQuantized);
    REQUIRE(kept.layers.front().half.wq != nullptr);
    REQUIRE(kept.token_embd_half != nullptr);
    CHECK(kept.layers.front().wq == nullptr);
    CHECK(kept.storage.size() < float32.storage.size());  // only the norms and RoPE data stay float
    auto logits = [&](const ModelWeights& weights) {
      CpuBackend backend(config, weights, 2);
      backend.allocate_kv_pool(64, 16);
      test::PagedBatchBuilder builder(16, 64, 3);
      const std::size_t seq = builder.add_sequence();
      return run_step(backend, builder.step({{seq, kPrompt}}), vocab);
    };
    CHECK(same_bits(logits(kept), logits(float32)));
  }
}
