// Sliding windows in the paged cache, end to end: the per-kind figures of an engine run
// worked out by hand (a dry-run backend of two kinds), and on the tiny Gemma 3 reference
// file (window 6 on 5 of its 6 layers) outputs equal llama.cpp's and the dense reference's
// while the window layers give their blocks back, at several block sizes, with sharing on
// and off, n = 2 forks and pools small enough that given-back blocks are reused; and a long
// prompt in small chunks, where each window layer holds at most window + chunk + one block
// of positions and the peak KV is a fraction of what every layer keeping every position
// holds (the same run's counted kind-0 blocks over all layers).
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "backend/dry_run_backend.h"
#include "cpu/cpu_backend.h"
#include "dense_forward.h"
#include "engine/engine.h"
#include "engine/run_to_completion.h"
#include "job/run_stats.h"
#include "loader/model_files.h"
#include "reference_data.h"
#include "test_paths.h"

using namespace pagedgen;

namespace {

PreparedRequest greedy_request(uint64_t index, std::vector<TokenId> prompt, int32_t max_tokens, int32_t n = 1) {
  PreparedRequest r;
  r.index = index;
  r.seed_key = std::to_string(index);
  r.prompt_ids = std::move(prompt);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  r.sampling.n = n;
  return r;
}

// Every choice's tokens, by request index then choice.
std::vector<std::vector<std::vector<TokenId>>> generated_ids(Engine& engine, std::vector<PreparedRequest> requests) {
  std::vector<std::vector<std::vector<TokenId>>> out(requests.size());
  engine.add_requests(std::move(requests));
  for (const OutputRecord& record : run_to_completion(engine)) {
    REQUIRE(std::holds_alternative<RequestOutput>(record));
    const auto& output = std::get<RequestOutput>(record);
    for (const auto& choice : output.choices) out[output.index].push_back(choice.token_ids);
  }
  return out;
}

struct Gemma3 {
  ModelFiles files{test::data_dir() / "arch-reference" / "gemma3" / "model.gguf"};
  ModelWeights weights = files.load_weights();
  std::vector<test::ReferencePrompt> prompts = test::load_reference_prompts("arch-reference/gemma3");
};

}  // namespace

TEST_CASE("per-kind KV figures of a hand-worked run: one sequence, window 6, block size 4") {
  // 16 bytes per token over 4 layers: kind 0 (1 layer) 4, kind 1 (window 6, 3 layers) 12;
  // per block of 4: 64 over all layers, 16 and 48. The pool of 10 blocks: the window kind
  // can hold at most 1 * (ceil(5 / 4) + 2) + ceil(8 / 4) = 6, kind 0 gets the rest of the
  // bytes: (640 - 6 * 48) / 16 = 22.
  const KvKind kinds[] = {{.window = 0, .num_layers = 1}, {.window = 6, .num_layers = 3}};
  DryRunBackend backend(16, kinds);
  EngineConfig config;
  config.block_size = 4;
  config.num_blocks = 10;
  config.max_num_seqs = 1;
  config.max_batch_tokens = 8;
  config.max_model_len = 64;
  Engine engine(config, backend, nullptr);
  std::vector<TokenId> prompt(13);
  std::iota(prompt.begin(), prompt.end(), 1);
  generated_ids(engine, {greedy_request(0, prompt, 6)});
  // Steps (snapshots after each: kind 0 blocks / kind 1 blocks, kind 1 positions):
  //   0 prefill 0..7          2 / 2   8      (the next query, at 8, reads 3..8)
  //   1 prefill 8..12         4 / 4   13     (queries up to 12 read back to 3)
  //   2 decode 13             4 / 2   6      (13 reads 8..13: logical blocks 0, 1 given back)
  //   3 decode 14, 4 decode 15  4 / 2   7, 8
  //   5 decode 16             5 / 3   9      (a new block in both kinds)
  //   6 decode 17             5 / 2   6      (17 reads 12..17: logical block 2 given back)
  const EngineStats& s = engine.stats();
  CHECK(s.num_steps == 7);
  CHECK(s.num_pool_blocks == 22);
  CHECK(s.kv_bytes_per_block == 64);
  CHECK(s.peak_used_blocks == 5);  // kind 0's
  CHECK(s.sum_used_blocks == 2 + 4 + 4 + 4 + 4 + 5 + 5);
  REQUIRE(s.kinds.size() == 2);
  CHECK(s.kinds[0].window == 0);
  CHECK(s.kinds[0].kv_bytes_per_block == 16);
  CHECK(s.kinds[0].num_pool_blocks == 22);
  CHECK(s.kinds[0].peak_used_blocks == 5);
  CHECK(s.kinds[0].sum_used_blocks == 28);
  CHECK(s.kinds[0].peak_filled_slots == 18);
  CHECK(s.kinds[0].peak_sequence_positions == 18);
  CHECK(s.kinds[1].window == 6);
  CHECK(s.kinds[1].kv_bytes_per_block == 48);
  CHECK(s.kinds[1].num_pool_blocks == 6);
  CHECK(s.kinds[1].peak_used_blocks == 4);
  CHECK(s.kinds[1].sum_used_blocks == 2 + 4 + 2 + 2 + 2 + 3 + 2);
  CHECK(s.kinds[1].peak_filled_slots == 13);
  CHECK(s.kinds[1].peak_sequence_positions == 13);
  // Bytes per step: 2*16+2*48 = 128, 4*16+4*48 = 256, 160, 160, 160, 5*16+3*48 = 224, 176;
  // every layer keeping every position: kind 0's blocks * 64, at most 5 * 64.
  CHECK(s.peak_kv_bytes == 256);
  CHECK(s.peak_full_attention_kv_bytes == 320);
  RunStats stats;
  stats.engine = s;
  const std::string json = stats.to_json();
  CHECK(json.find("\"pool_bytes\": " + std::to_string(22 * 16 + 6 * 48)) != std::string::npos);
  CHECK(json.find("\"peak_kv_bytes\": 256, \"peak_full_attention_kv_bytes\": 320") != std::string::npos);
  CHECK(json.find("{\"kind\": 1, \"window\": 6, \"kv_bytes_per_block\": 48, \"pool_blocks\": 6") != std::string::npos);
}

TEST_CASE(
    "Gemma 3: window blocks given back and reused, outputs equal llama.cpp's at every block size, sharing on and off") {
  const Gemma3 g;
  REQUIRE(g.files.config().kv_kinds().size() == 2);
  REQUIRE(g.files.config().sliding_window == 6);
  // Each reference prompt twice: n = 2 (fork, copy-on-write), then n = 1 (a prefix hit on
  // the first's blocks where sharing is on and the window kind still caches the blocks
  // before the hit point: measured, only at block size 16; at 1 and 4 the small window pool
  // has reused them, and the hit is dropped rather than wrong). Block size 16 preempts.
  std::vector<PreparedRequest> requests;
  for (const test::ReferencePrompt& p : g.prompts) {
    const auto num_tokens = static_cast<int32_t>(p.greedy_ids.size());
    requests.push_back(greedy_request(requests.size(), p.prompt_ids, num_tokens, 2));
    requests.push_back(greedy_request(requests.size(), p.prompt_ids, num_tokens));
  }
  int64_t num_hit_tokens = 0, num_cow_copies = 0, num_preemptions = 0;
  for (const int32_t block_size : {1, 4, 16}) {
    for (const bool sharing : {true, false}) {
      CAPTURE(block_size);
      CAPTURE(sharing);
      CpuBackend backend(g.files.config(), g.weights);
      EngineConfig config;
      config.block_size = block_size;
      // 96 tokens' worth: two sequences at a time in chunks of 7 leave the window kind
      // 2 * (ceil(5 / bs) + 2) + ceil(7 / bs) blocks (21, 10, 7 -> 6), so the blocks it gives
      // back are soon taken again; kind 0 (1 layer of 6) gets the rest of the bytes.
      config.num_blocks = 96 / block_size;
      config.max_num_seqs = 2;
      config.max_batch_tokens = 7;
      config.prefix_sharing = sharing;
      config.max_model_len = g.files.config().context_length;
      Engine engine(config, backend, &g.files.tokenizer());
      const auto out = generated_ids(engine, requests);
      for (std::size_t i = 0; i < requests.size(); ++i) {
        CAPTURE(i);
        const test::ReferencePrompt& p = g.prompts[i / 2];
        REQUIRE(out[i].size() == static_cast<std::size_t>(requests[i].sampling.n));
        for (const auto& choice : out[i]) CHECK(choice == p.greedy_ids);
      }
      const EngineStats& s = engine.stats();
      REQUIRE(s.kinds.size() == 2);
      CHECK(s.kinds[1].num_pool_blocks ==
            std::min<int64_t>(96 / block_size,
                              2 * ((5 + block_size - 1) / block_size + 2) + (7 + block_size - 1) / block_size));
      CHECK(s.kinds[1].peak_sequence_positions <= 6 + 7 + block_size);
      num_hit_tokens += s.prefix_hit_tokens;
      num_cow_copies += s.cow_copies;
      num_preemptions += s.preemptions;
      if (!sharing) CHECK(s.prefix_hit_tokens == 0);
    }
  }
  CHECK(num_hit_tokens > 0);
  CHECK(num_cow_copies > 0);
  CHECK(num_preemptions > 0);
}

TEST_CASE("Gemma 3: a long prompt in small chunks holds window + chunk + one block per window layer") {
  const Gemma3 g;
  const ModelConfig& c = g.files.config();
  // 400 tokens of the reference prompts, repeated, then 8 greedy tokens.
  std::vector<TokenId> prompt;
  while (prompt.size() < 400)
    for (const test::ReferencePrompt& p : g.prompts)
      prompt.insert(prompt.end(), p.prompt_ids.begin(), p.prompt_ids.end());
  prompt.resize(400);
  DenseForward dense(c, g.weights, prompt.size() + 8);
  const std::vector<TokenId> expected = greedy_decode(dense, prompt, 8);
  for (const int32_t block_size : {4, 16}) {
    CAPTURE(block_size);
    CpuBackend backend(c, g.weights);
    EngineConfig config;
    config.block_size = block_size;
    config.num_blocks = 1024 / block_size;
    config.max_batch_tokens = 16;
    config.max_model_len = c.context_length;
    Engine engine(config, backend, &g.files.tokenizer());
    const auto out = generated_ids(engine, {greedy_request(0, prompt, 8)});
    CHECK(out.at(0).at(0) == expected);
    const EngineStats& s = engine.stats();
    REQUIRE(s.kinds.size() == 2);
    CHECK(s.kinds[0].peak_sequence_positions == 400 + 7);  // the last token is sampled, never computed
    CHECK(s.kinds[1].peak_sequence_positions <= 6 + 16 + block_size);
    // Kind 0 is 1 layer of 6 and holds every position; the 5 window layers hold at most
    // 6 + 16 + block_size each: (407 + 5 * 26) / (6 * 407) = 22% at block size 4.
    const double fraction = static_cast<double>(s.peak_kv_bytes) / static_cast<double>(s.peak_full_attention_kv_bytes);
    MESSAGE("block size " << block_size << ": peak KV " << s.peak_kv_bytes << " bytes, " << 100 * fraction
                          << "% of every layer keeping every position (" << s.peak_full_attention_kv_bytes
                          << "); a window layer held at most " << s.kinds[1].peak_sequence_positions << " positions");
    CHECK(fraction < 0.35);
    CHECK(s.peak_full_attention_kv_bytes == s.peak_used_blocks * s.kv_bytes_per_block);
  }
}
