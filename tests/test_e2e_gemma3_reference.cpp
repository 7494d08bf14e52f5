// Gemma 3 270M, a real model of a second family (scripts/fetch-gemma3.sh places it; these
// tests skip without it), against llama.cpp on the same file (scripts/make-reference.py
// --model gemma3, tests/data/reference-gemma3*): its 262k SentencePiece vocabulary and
// Gemma's chat template on llama.cpp's prompt ids and text, the exact path against
// llama.cpp's F32 run, the fast path against its run of the Q4_K_M file as it is.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <string>

#include "cli_runner.h"
#include "cpu/cpu_backend.h"
#include "gguf_writer.h"
#include "loader/model_files.h"
#include "loader/model_vocabulary.h"
#include "model/model_weights.h"
#include "paged_batch_builder.h"
#include "reference_data.h"
#include "reference_engine.h"
#include "test_paths.h"
#include "tokenizer/builtin_chat_templates.h"
#include "tokenizer/chat_template.h"

using namespace pagedgen;

namespace {

// The exact path against llama.cpp's F32 run, over the reference's 64 best ids at the last
// prompt position. Measured: max |diff| 0.0011-0.0114 per prompt on logits of magnitude
// 12-24. Part of it is llama.cpp's GELU, looked up in a float16 table (see
// test_e2e_arch_reference): with that rounding copied into pagedgen's GeGLU (an experiment,
// not kept) the worst prompt drops to 0.0067; the rest is float32 summation order through
// 18 layers whose residual stream grows to thousands. A wrong norm, RoPE base or window
// moves logits by whole units.
constexpr float kGemma3LogitTolerance = 0.025f;
// The fast path against llama.cpp's run of the Q4_K_M file as it is. Both quantize the
// activations of the Q8_0/Q5_0 matrices the same way (int8 per 32 values, float16 scale);
// for the Q4_K/Q6_K ones (attn_output, ffn_down) llama.cpp uses Q8_K (one float scale per
// 256 values), pagedgen its per-32 blocks. Measured: max |diff| 1.73 over the 64 best ids
// (1.28 with Q8_K-style activations for those matrices, an experiment, not kept), greedy
// equal at 405 of 416 teacher-forced steps (407 with Q8_K-style), every difference at a
// llama.cpp margin under 0.28. What remains is of the kind seen on the default model's
// Q4_1 file: small float differences (llama.cpp's float16 GELU table among them) flipping
// int8 roundings of activations.
constexpr float kGemma3FastLogitTolerance = 2.5f;
// Teacher-forced greedy steps: where llama.cpp's top two logits are this far apart the
// fast path must choose the same, and most steps must agree.
constexpr float kGemma3FastGreedyMargin = 0.5f;
constexpr double kGemma3FastGreedyAgreement = 0.95;

#define PAGEDGEN_SKIP_WITHOUT_GEMMA3()                                                     \
  if (!::pagedgen::test::gemma3_model()) {                                                 \
    MESSAGE("skipped: Gemma 3 270M is not installed (scripts/fetch-gemma3.sh places it)"); \
    return;                                                                                \
  }

// The largest |difference| between `logits` and the reference's top logits (its 64 best
// ids), and whether the best of them is also `logits`' argmax.
struct TopLogitsDiff {
  float max_diff = 0.0f;
  bool same_argmax = false;
};

TopLogitsDiff compare_top_logits(std::span<const float> logits, const test::ReferencePrompt& p) {
  REQUIRE(!p.top_logits.empty());
  TopLogitsDiff d;
  for (const auto& [id, value] : p.top_logits)
    d.max_diff = std::max(d.max_diff, std::abs(logits[static_cast<std::size_t>(id)] - value));
  const auto argmax = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  d.same_argmax = argmax == p.top_logits.front().first;
  return d;
}

// Logits at the last prompt position on the paged CPU backend (float32 KV cache, as
// llama.cpp's runs had), prefilled in one step.
std::vector<float> prefill_logits(const ModelFiles& files, const ModelWeights& weights,
                                  const test::ReferencePrompt& p) {
  CpuBackend backend(files.config(), weights);
  const auto num_blocks = static_cast<int32_t>(p.prompt_ids.size() / 16 + 2);
  backend.allocate_kv_pool(num_blocks, 16);
  test::PagedBatchBuilder builder(16, num_blocks, 7);
  const std::size_t seq = builder.add_sequence();
  std::vector<float> logits(static_cast<std::size_t>(files.config().vocab_size));
  backend.forward(builder.step({{seq, p.prompt_ids}}), logits);
  return logits;
}

// The first step where `ours` leaves the reference's greedy tokens, with llama.cpp's
// top-2 margin there; nullopt when they are equal.
struct Divergence {
  std::string message;
  float reference_margin;
};

std::optional<Divergence> first_divergence(const std::vector<TokenId>& ours, const test::ReferencePrompt& p) {
  for (std::size_t step = 0; step < p.greedy_ids.size(); ++step)
    if (step >= ours.size() || ours[step] != p.greedy_ids[step])
      return Divergence{p.name + ": first differs at greedy step " + std::to_string(step) + " (pagedgen " +
                            (step < ours.size() ? std::to_string(ours[step]) : "none") + ", llama.cpp " +
                            std::to_string(p.greedy_ids[step]) + ", llama.cpp's top-2 margin there " +
                            std::to_string(p.greedy_margins[step]) + ")",
                        p.greedy_margins[step]};
  return std::nullopt;
}

}  // namespace

TEST_CASE("Gemma 3 270M: prompts and Gemma-template chats tokenize to llama.cpp's ids and decode to its text") {
  PAGEDGEN_SKIP_WITHOUT_GEMMA3();
  const std::vector<test::ReferencePrompt> prompts = test::load_reference_prompts("reference-gemma3");
  const std::vector<test::ReferencePrompt> quantized = test::load_reference_prompts("reference-gemma3-q4_k_m");
  REQUIRE(prompts.size() == 13);
  REQUIRE(quantized.size() == prompts.size());
  const ModelVocabulary vocabulary(*test::gemma3_model());
  const Tokenizer& tokenizer = vocabulary.tokenizer();
  REQUIRE(tokenizer.vocab_size() == 262144);
  REQUIRE(tokenizer.special().bos);
  // As `--chat-template gemma` makes it (the file carries no template).
  const ChatTemplate gemma(jinja::Template::parse(*builtin_chat_template("gemma")),
                           tokenizer.piece(*tokenizer.special().bos), tokenizer.piece(*tokenizer.special().eos),
                           std::chrono::year(2025) / 1 / 1);
  std::size_t num_chats = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const test::ReferencePrompt& p = prompts[i];
    CAPTURE(p.name);
    CHECK(quantized[i].prompt_ids == p.prompt_ids);
    std::vector<TokenId> ids;
    if (p.chat) {
      // What generate does with `messages`: the template's text (written with Gemma 3's
      // own Jinja template by the script), special tokens parsed, BOS from the template.
      ++num_chats;
      const std::string text = gemma.render(*p.chat);
      CHECK(text == p.text);
      ids = tokenizer.encode(text, true);
    } else {
      // What generate does with `prompt`: BOS (add_bos_token), then the text as text.
      REQUIRE(tokenizer.special().add_bos);
      ids = {*tokenizer.special().bos};
      const std::vector<TokenId> body = tokenizer.encode(p.text, false);
      ids.insert(ids.end(), body.begin(), body.end());
    }
    CHECK(ids == p.prompt_ids);
    for (const test::ReferencePrompt* r : {&p, &quantized[i]}) {
      IncrementalDecoder decoder(tokenizer, true, false);
      std::string text;
      for (TokenId id : r->greedy_ids) text += decoder.push(id);
      CHECK(text + decoder.finish() == r->greedy_text);
    }
  }
  CHECK(num_chats == 2);
}

TEST_CASE("Gemma 3 270M, exact path: logits and greedy tokens equal llama.cpp's F32 run") {
  PAGEDGEN_SKIP_WITHOUT_GEMMA3();
  const std::vector<test::ReferencePrompt> prompts = test::load_reference_prompts("reference-gemma3");
  const ModelFiles files(*test::gemma3_model());
  const ModelWeights weights = files.load_weights();

  float worst = 0.0f;
  for (const test::ReferencePrompt& p : prompts) {
    CAPTURE(p.name);
    const TopLogitsDiff d = compare_top_logits(prefill_logits(files, weights, p), p);
    CHECK(d.max_diff < kGemma3LogitTolerance);
    CHECK(d.same_argmax);
    worst = std::max(worst, d.max_diff);
  }
  MESSAGE("Gemma 3 exact path: largest |logit difference| from llama.cpp's F32 run over the 64 best ids of "
          << prompts.size() << " prompts: " << worst << " (tolerance " << kGemma3LogitTolerance << ")");

  // Free-running greedy tokens of all prompts in one batched engine run. Measured: all 416
  // equal to llama.cpp's, though its margin is 0.00035 at one step (one_word, step 8) and
  // under 0.02 at five more; a CPU whose float32 GEMM sums in another order may rightly part
  // ways at such a near-tie (within twice the logit tolerance), never at a clear step.
  CpuBackend backend(files.config(), weights);
  const std::vector<Completion> greedy =
      test::engine_greedy(backend, files.tokenizer(), prompts, {16, 2048, 256, files.config().context_length});
  std::size_t num_equal = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    CAPTURE(prompts[i].name);
    const std::optional<Divergence> divergence = first_divergence(greedy[i].token_ids, prompts[i]);
    if (!divergence) {
      ++num_equal;
      continue;
    }
    MESSAGE(divergence->message);
    CHECK(divergence->reference_margin < 2 * kGemma3LogitTolerance);
  }
  MESSAGE("Gemma 3 exact path: free-running greedy tokens equal to llama.cpp's for " << num_equal << " of "
                                                                                     << prompts.size() << " prompts");
}

TEST_CASE("Gemma 3 270M, fast path (weights as stored, int8 activations): llama.cpp's run of the Q4_K_M file") {
  PAGEDGEN_SKIP_WITHOUT_GEMMA3();
  const std::vector<test::ReferencePrompt> prompts = test::load_reference_prompts("reference-gemma3-q4_k_m");
  const ModelFiles files(*test::gemma3_model());
  const ModelWeights weights = files.load_weights(WeightForm::kPackedWhereQuantized);
  const auto vocab = static_cast<std::size_t>(files.config().vocab_size);

  float worst = 0.0f, worst_margin = 0.0f;
  std::size_t num_steps = 0, num_equal = 0;
  for (const test::ReferencePrompt& p : prompts) {
    CAPTURE(p.name);
    CpuBackend backend(files.config(), weights);
    const std::size_t capacity = p.prompt_ids.size() + p.greedy_ids.size();
    const auto num_blocks = static_cast<int32_t>(capacity / 16 + 2);
    backend.allocate_kv_pool(num_blocks, 16);
    test::PagedBatchBuilder builder(16, num_blocks, 7);
    const std::size_t seq = builder.add_sequence();
    std::vector<float> logits(vocab);
    backend.forward(builder.step({{seq, p.prompt_ids}}), logits);
    const TopLogitsDiff d = compare_top_logits(logits, p);
    CHECK(d.max_diff < kGemma3FastLogitTolerance);
    worst = std::max(worst, d.max_diff);
    // Greedy, each step fed llama.cpp's token, so that one near-tie does not change every
    // later step.
    const test::TeacherForcedGreedy g =
        test::teacher_forced_greedy(backend, builder, seq, p, logits, kGemma3FastGreedyMargin);
    num_steps += g.num_steps;
    num_equal += g.num_equal;
    worst_margin = std::max(worst_margin, g.worst_margin);
  }
  CHECK(static_cast<double>(num_equal) >= kGemma3FastGreedyAgreement * static_cast<double>(num_steps));

  // Free-running, as generate runs it: the first step where the fast path leaves llama.cpp's
  // tokens is a near-tie of llama.cpp's (after it the texts go their own ways, as those of
  // llama.cpp's own AVX2 and AVX-512 builds do on the default model).
  CpuBackend backend(files.config(), weights);
  const std::vector<Completion> greedy =
      test::engine_greedy(backend, files.tokenizer(), prompts, {16, 2048, 256, files.config().context_length});
  std::size_t num_prompts_equal = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    CAPTURE(prompts[i].name);
    const std::optional<Divergence> divergence = first_divergence(greedy[i].token_ids, prompts[i]);
    if (!divergence) {
      ++num_prompts_equal;
      continue;
    }
    MESSAGE(divergence->message);
    CHECK(divergence->reference_margin < kGemma3FastGreedyMargin);
  }
  MESSAGE("Gemma 3 fast path: free-running greedy tokens equal to llama.cpp's for " << num_prompts_equal << " of "
                                                                                    << prompts.size() << " prompts");
  MESSAGE("Gemma 3 fast path over " << prompts.size() << " prompts: greedy tokens equal to llama.cpp's on the Q4_K_M "
                                    << "file at " << num_equal << " of " << num_steps << " teacher-forced steps "
                                    << "(largest llama.cpp margin where they differ " << worst_margin
                                    << "); largest |logit difference| over its 64 best ids " << worst << " (tolerance "
                                    << kGemma3FastLogitTolerance << ")");
}

// Sliding windows' acceptance test on the real model: a ~4,000-token prompt computed in chunks
// of 256 through `generate`. Gemma 3 270M has 15 window layers (512 positions) and 3 full
// ones: counted in the stats, the peak KV is under 35% of what every layer keeping every
// position would hold, each window layer holds at most window + chunk + one block, and the
// output file is the same at block sizes 16 and 32.
TEST_CASE("Gemma 3 270M: a 4,000-token prompt in chunks of 256 holds under 35% of the full-attention KV") {
  PAGEDGEN_SKIP_WITHOUT_GEMMA3();
  test::TempDir dir("pagedgen-gemma3-window");
  const char* words[] = {"the",    "river",  "city",    "market", "old",     "bridge", "north",
                         "wind",   "summer", "library", "quiet",  "morning", "train",  "station",
                         "coffee", "letter", "garden",  "stone",  "window",  "harbor", "lamp"};
  std::string prompt = "Read the notes below and summarize them.\\n\\n";
  uint32_t state = 7;
  for (int sentence = 0; sentence < 445; ++sentence) {
    for (int w = 0; w < 8; ++w) {
      state = state * 1664525u + 1013904223u;
      prompt += std::string(w == 0 ? "" : " ") + words[(state >> 16) % std::size(words)];
    }
    prompt += ". ";
  }
  prompt += "\\n\\nSummary:";
  const auto input = dir / "long.jsonl";
  std::ofstream(input) << "{\"id\": \"long\", \"prompt\": \"" << prompt
                       << "\", \"temperature\": 0, \"max_tokens\": 16}\n";

  constexpr int64_t kWindow = 512, kChunk = 256;
  std::string first_output;
  for (const int64_t block_size : {16, 32}) {
    CAPTURE(block_size);
    const auto out = dir / fmt::format("bs{}.jsonl", block_size);
    const auto stats = dir / fmt::format("bs{}.stats.json", block_size);
    const test::CliResult r =
        test::run_pagedgen(fmt::format("generate -q -m {} -i {} -o {} --stats {} --max-batch-tokens {} --block-size {}",
                                       test::sh_quote(*test::gemma3_model()), test::sh_quote(input),
                                       test::sh_quote(out), test::sh_quote(stats), kChunk, block_size),
                           dir / "stderr.txt");
    INFO(r.stderr_text);
    REQUIRE(r.exit_code == 0);
    const std::string output = test::read_file(out);
    const int64_t prompt_tokens = test::json_int(output, "usage", "prompt_tokens");
    CHECK(prompt_tokens >= 3900);
    CHECK(prompt_tokens <= 4100);
    if (first_output.empty()) first_output = output;
    CHECK(output == first_output);

    simdjson::dom::parser parser;
    const simdjson::dom::element kv = parser.load(stats.string())["kv_kinds"];
    const simdjson::dom::array kinds = kv["kinds"];
    REQUIRE(kinds.size() == 2);
    const simdjson::dom::element window_kind = kinds.at(1);
    CHECK(int64_t(window_kind["window"]) == kWindow);
    CHECK(int64_t(window_kind["peak_sequence_positions"]) <= kWindow + kChunk + block_size);
    CHECK(int64_t(kinds.at(0)["peak_sequence_positions"]) >= prompt_tokens);
    const double fraction = double(kv["peak_kv_fraction_of_full_attention"]);
    MESSAGE("block size " << block_size << ": peak KV " << int64_t(kv["peak_kv_bytes"]) << " bytes, " << fraction * 100
                          << "% of full attention's " << int64_t(kv["peak_full_attention_kv_bytes"])
                          << "; a window layer held at most " << int64_t(window_kind["peak_sequence_positions"])
                          << " positions");
    CHECK(fraction < 0.35);
  }
}
