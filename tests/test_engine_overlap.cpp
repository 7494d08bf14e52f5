// The engine's overlap (engine.h): with it on, a step whose tokens cannot change what the
// scheduler does next is overlapped and the next step is submitted first.
// Checked here without a model, on a backend whose token ids are a hash of each row's
// input (its last input token, its position, its random bits), so a step that read a
// placeholder instead of the id it defers to would give other tokens:
//   - hand-worked cases: which steps are overlapped (ignore_eos, max_tokens, stop ids
//     before and after min_tokens, n > 1 forks), and in which step() call a record comes;
//   - mixed workloads (prefix sharing and partial-block copies, copy-on-write of n > 1
//     forks, preemption in a small pool, chunked prefill, seeded sampling, stop ids,
//     max_tokens and max_model_len ends, failed rows): records, every counted figure, and
//     every batch, sampling row and block copy the backend was given are the same with
//     the overlap on and off, and the workloads do exercise each of those;
//   - SynchronousSteps (the default Backend::submit/collect) and Scheduler::set_token.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/synchronous_steps.h"
#include "engine/engine.h"

using namespace pagedgen;

namespace {

uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// What the backend was given in one step, as text: equal texts, equal inputs.
std::string describe(const StepBatch& b, const SamplingBatch& s, const std::vector<BlockCopy>& copies) {
  std::string text =
      fmt::format("seqs {} tokens {} bs {} mb {}\n", b.num_seqs, b.num_tokens, b.block_size, b.max_blocks_per_seq);
  text += fmt::format("ids {}\npos {}\nslots {}\nqs {}\nctx {}\ntables {}\nlogits {}\n", fmt::join(b.token_ids, ","),
                      fmt::join(b.positions, ","), fmt::join(b.slot_mapping, ","), fmt::join(b.query_start, ","),
                      fmt::join(b.context_lens, ","), fmt::join(b.block_tables, ","), fmt::join(b.logits_rows, ","));
  for (const SamplingRow& r : s.rows) {
    text += fmt::format("row {} {} {}\n", r.logits_row, r.num_generated, r.random_bits);
    // The tokens the penalties read (a row without them may see placeholders: it never reads them).
    if (r.params->penalizes_tokens()) text += fmt::format("penalized tokens {}\n", fmt::join(r.tokens, ","));
  }
  for (const BlockCopy& c : copies) text += fmt::format("copy {} {}\n", c.src, c.dst);
  return text;
}

// A backend that computes a step at once (the default submit/collect): each row's token is
// a hash of its logits row's input token and position and its random bits, in [0, vocab);
// a row whose hash is a multiple of `fail_every` gives no token (unusable logits).
class HashModelBackend final : public Backend {
 public:
  HashModelBackend(int32_t vocab, uint64_t fail_every) : vocab_(vocab), fail_every_(fail_every) {}

  std::string name() const override { return "hash-model"; }
  std::size_t kv_bytes_per_block(std::size_t block_size) const override { return 64 * block_size; }
  void allocate_kv_pool(std::size_t, std::size_t) override {}
  void copy_blocks(std::span<const BlockCopy> copies) override { copies_.assign(copies.begin(), copies.end()); }

  std::vector<SampledToken> step(const StepBatch& batch, const SamplingBatch& sampling) override {
    steps_.push_back(describe(batch, sampling, copies_));
    copies_.clear();
    std::vector<SampledToken> tokens;
    for (const SamplingRow& row : sampling.rows) {
      const auto t = static_cast<std::size_t>(batch.logits_rows[static_cast<std::size_t>(row.logits_row)]);
      const uint64_t h = mix(static_cast<uint64_t>(batch.token_ids[t]) * 1000003u +
                             static_cast<uint64_t>(batch.positions[t]) * 7919u + row.random_bits);
      if (fail_every_ > 0 && h % fail_every_ == 0)
        tokens.push_back({});
      else
        tokens.push_back({static_cast<TokenId>(h % static_cast<uint64_t>(vocab_)), std::nullopt});
    }
    return tokens;
  }

  const std::vector<std::string>& steps() const { return steps_; }

 private:
  int32_t vocab_;
  uint64_t fail_every_;
  std::vector<BlockCopy> copies_;
  std::vector<std::string> steps_;
};

struct RunResult {
  std::map<uint64_t, std::string> records;  // by input index, as text
  std::vector<std::string> figures;         // the counted figures of EngineStats, one line each
  std::vector<std::string> backend_steps;   // what the backend was given
  std::vector<bool> overlapped;             // per step() call
  std::vector<int> records_per_call;        // records that came out of each step() call
  int64_t num_errors = 0;
  int64_t num_stops = 0;  // samples ended by a stop id
};

std::string describe(const OutputRecord& record) {
  if (const auto* error = std::get_if<RequestError>(&record))
    return fmt::format("error {} {}", error->code, error->message);
  const auto& out = std::get<RequestOutput>(record);
  std::string text = fmt::format("prompt {} cached {}", out.prompt_tokens, out.cached_tokens);
  for (const Completion& c : out.choices)
    text +=
        fmt::format(" | {} {} [{}]", finish_reason_name(c.finish_reason), c.num_tokens, fmt::join(c.token_ids, ","));
  return text;
}

std::vector<std::string> counted_figures(const EngineStats& e) {
  std::vector<std::string> f = {
      fmt::format("rejected {} samples {} prompt {} distinct {} groups {} computed prompt {} generated {}",
                  e.num_rejected_requests, e.num_samples, e.num_prompt_tokens, e.num_distinct_prompt_tokens,
                  e.num_prefix_groups, e.num_computed_prompt_tokens, e.num_generated_tokens),
      fmt::format("steps {} used {} peak {} sum {} allocated {} filled {} logical {} sequence {}", e.num_steps,
                  e.used_blocks, e.peak_used_blocks, e.sum_used_blocks, e.sum_allocated_slots, e.sum_filled_slots,
                  e.sum_logical_slots, e.sum_sequence_slots),
      fmt::format("peaks {} {} {} naive {} {} {} {}", e.peak_allocated_slots, e.peak_filled_slots, e.peak_shared_blocks,
                  e.sum_naive_max_len_slots, e.sum_naive_request_slots, e.peak_naive_max_len_slots,
                  e.peak_naive_request_slots),
      fmt::format("prefix {} {} {} {} {} {} evictions {} cow {} preemptions {} recomputed {}", e.prefix_lookup_blocks,
                  e.prefix_hit_blocks, e.prefix_hit_tokens, e.prefix_partial_hits, e.prefix_partial_tokens,
                  e.prefix_key_collisions, e.evictions, e.cow_copies, e.preemptions, e.recomputed_tokens),
      fmt::format("timeline stride {} points {}", e.timeline_stride, e.timeline.size()),
  };
  for (const KvTimelinePoint& p : e.timeline)
    f.push_back(fmt::format("t {} {} {} {} {} {} {}", p.step, p.kv.used_blocks, p.kv.allocated_slots, p.kv.filled_slots,
                            p.kv.logical_slots, p.kv.sequence_slots, p.kv.shared_blocks));
  return f;
}

RunResult run_engine(EngineConfig config, const std::vector<PreparedRequest>& requests, bool overlap, int32_t vocab,
                     uint64_t fail_every) {
  config.overlap = overlap;
  HashModelBackend backend(vocab, fail_every);
  Engine engine(config, backend, nullptr);
  RunResult result;
  engine.add_requests(requests);
  while (engine.has_unfinished()) {
    REQUIRE(result.overlapped.size() < 100000);
    StepResult step = engine.step();
    result.overlapped.push_back(engine.last_step_timings().overlapped);
    result.records_per_call.push_back(static_cast<int>(step.finished.size()));
    for (const OutputRecord& record : step.finished) {
      if (std::holds_alternative<RequestError>(record))
        ++result.num_errors;
      else
        for (const Completion& c : std::get<RequestOutput>(record).choices)
          result.num_stops += c.finish_reason == FinishReason::kStop;
      REQUIRE(result.records.emplace(record_index(record), describe(record)).second);
    }
  }
  result.figures = counted_figures(engine.stats());
  result.backend_steps = backend.steps();
  return result;
}

int64_t count(const std::vector<bool>& flags) { return std::count(flags.begin(), flags.end(), true); }

PreparedRequest ignore_eos_request(uint64_t index, std::vector<TokenId> prompt, int32_t max_tokens) {
  PreparedRequest r;
  r.index = index;
  r.seed_key = std::to_string(index);
  r.prompt_ids = std::move(prompt);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

EngineConfig small_config() {
  EngineConfig config;
  config.block_size = 4;
  config.num_blocks = 64;
  config.max_num_seqs = 8;
  config.max_batch_tokens = 64;
  config.max_model_len = 1 << 20;
  return config;
}

// The same records, figures and backend inputs both ways; returns the overlap's run.
RunResult check_same_both_ways(const EngineConfig& config, const std::vector<PreparedRequest>& requests, int32_t vocab,
                               uint64_t fail_every) {
  const RunResult off = run_engine(config, requests, false, vocab, fail_every);
  const RunResult on = run_engine(config, requests, true, vocab, fail_every);
  CHECK(count(off.overlapped) == 0);
  CHECK(on.records == off.records);
  CHECK(on.figures == off.figures);
  REQUIRE(on.backend_steps.size() == off.backend_steps.size());
  for (std::size_t i = 0; i < on.backend_steps.size(); ++i) {
    INFO("backend step " << i);
    CHECK(on.backend_steps[i] == off.backend_steps[i]);
  }
  return on;
}

}  // namespace

TEST_CASE("one request, length ends only: every step overlapped, the record one step() call later") {
  // Prompt of 5, 3 new tokens: step 1 prefills and samples token 1, steps 2 and 3 decode.
  const std::vector<PreparedRequest> requests = {ignore_eos_request(0, {1, 2, 3, 4, 5}, 3)};
  const RunResult off = run_engine(small_config(), requests, false, 50, 0);
  const RunResult on = run_engine(small_config(), requests, true, 50, 0);
  CHECK(off.overlapped == std::vector<bool>{false, false, false});
  CHECK(off.records_per_call == std::vector<int>{0, 0, 1});
  // Step 3 ends the sample by length before its id is known; a fourth call schedules nothing and
  // applies it.
  CHECK(on.overlapped == std::vector<bool>{true, true, true, false});
  CHECK(on.records_per_call == std::vector<int>{0, 0, 0, 1});
  CHECK(on.records == off.records);
  CHECK(on.figures == off.figures);
  CHECK(on.backend_steps == off.backend_steps);
  // The decode steps read the ids of the steps before (overlap_tokens): the input token of step 2
  // is the hash of step 1's last prompt token at position 4, not a placeholder.
  const std::string& record = on.records.at(0);
  const std::string first = record.substr(record.find('[') + 1, record.find(',') - record.find('[') - 1);
  CHECK(on.backend_steps[1].find("ids " + first + "\n") != std::string::npos);
}

TEST_CASE("stop ids: a step is overlapped only while min_tokens holds every stop back") {
  PreparedRequest r = ignore_eos_request(0, {1, 2, 3, 4, 5}, 6);
  r.sampling.stop_token_ids = {1000};  // never sampled (vocab 50): the sample runs to max_tokens
  r.sampling.min_tokens = 2;
  const RunResult on = run_engine(small_config(), {r}, true, 50, 0);
  // Tokens 1 and 2 cannot stop it (min_tokens), tokens 3..6 could.
  CHECK(on.overlapped == std::vector<bool>{true, false, false, false, false, false});
  CHECK(on.records_per_call == std::vector<int>{0, 0, 0, 0, 0, 1});
}

TEST_CASE("n > 1: the step that forks is not overlapped; the samples' decode steps are") {
  PreparedRequest r = ignore_eos_request(0, {1, 2, 3, 4, 5, 6}, 3);
  r.sampling.n = 2;
  r.sampling.temperature = 1.0;
  const RunResult off = run_engine(small_config(), {r}, false, 50, 0);
  const RunResult on = run_engine(small_config(), {r}, true, 50, 0);
  CHECK(on.overlapped == std::vector<bool>{false, true, true, false});
  CHECK(on.records == off.records);
  CHECK(on.figures == off.figures);
  CHECK(on.backend_steps == off.backend_steps);
}

TEST_CASE("penalties read the sequence's tokens: their steps wait for the ids; logit_bias alone does not") {
  PreparedRequest penalized = ignore_eos_request(0, {1, 2, 3, 4, 5}, 4);
  penalized.sampling.presence_penalty = 1.0;
  const RunResult on = check_same_both_ways(small_config(), {penalized}, 50, 0);
  // Every row the backend saw carries the real tokens (check_same_both_ways compares them),
  // and no step is overlapped.
  CHECK(count(on.overlapped) == 0);
  PreparedRequest biased = ignore_eos_request(0, {1, 2, 3, 4, 5}, 3);
  biased.sampling.logit_bias = {{7, -100.0}};
  const RunResult biased_on = check_same_both_ways(small_config(), {biased}, 50, 0);
  CHECK(biased_on.overlapped == std::vector<bool>{true, true, true, false});
}

TEST_CASE("a failed row: its sequence runs one more step both ways, then the request is an error record") {
  // Find a prompt whose second sampled token fails (vocab 50, fail when the hash is a
  // multiple of 7): fail_every 7 fails about one row in seven.
  std::optional<RunResult> on;
  for (TokenId first = 1; first < 200 && !on; ++first) {
    const std::vector<PreparedRequest> requests = {ignore_eos_request(0, {2, 3, first}, 4)};
    const RunResult off = run_engine(small_config(), requests, false, 50, 7);
    if (off.num_errors == 0 || off.records.at(0).find("after 4 tokens") == std::string::npos) continue;
    // The row of token 2 (after 3 prompt tokens and 1 generated) failed: steps 1 and 2
    // sampled, step 3 ran the failed sequence once more with no token of its own.
    CHECK(off.backend_steps.size() == 3);
    on = check_same_both_ways(small_config(), requests, 50, 7);
  }
  REQUIRE(on);
  CHECK(on->records.at(0).find("numerical_error") != std::string::npos);
}

TEST_CASE("mixed workloads: the same records, figures and backend inputs with the overlap on and off") {
  // Four prefix groups of prompts (shared full blocks and partial-block copies), n of 1-3,
  // greedy and seeded sampling, max_tokens 1-12, stop ids (with and without min_tokens) in
  // a vocabulary of 40 so that they are sampled, and a failed row now and then.
  std::vector<PreparedRequest> requests;
  for (uint64_t i = 0; i < 36; ++i) {
    std::vector<TokenId> prompt;
    const auto group = static_cast<TokenId>(i % 4);
    for (TokenId t = 0; t < 5 + 3 * group; ++t) prompt.push_back(100 + 10 * group + t);
    for (uint64_t t = 0; t < i % 5 + 1; ++t) prompt.push_back(static_cast<TokenId>(200 + i * 7 + t));
    PreparedRequest r = ignore_eos_request(i, prompt, static_cast<int32_t>(1 + (i * 5) % 12));
    r.sampling.n = static_cast<int32_t>(1 + i % 3);
    if (i % 2 == 1) {
      r.sampling.temperature = 0.8;
      if (i % 4 == 1) r.sampling.seed = 1234 + i;
    }
    if (i % 3 == 0) r.sampling.stop_token_ids = {7, 13};
    if (i % 6 == 0) r.sampling.min_tokens = 3;
    requests.push_back(std::move(r));
  }
  struct Case {
    const char* name;
    EngineConfig config;
  };
  EngineConfig roomy = small_config();
  EngineConfig tight = small_config();
  tight.num_blocks = 14;  // preempts
  tight.max_num_seqs = 6;
  EngineConfig chunked = small_config();
  chunked.block_size = 2;
  chunked.num_blocks = 40;
  chunked.max_batch_tokens = 7;  // prefills in chunks
  chunked.max_model_len = 20;    // some samples end at the model's length
  EngineConfig unshared = tight;
  unshared.prefix_sharing = false;
  unshared.block_size = 8;
  unshared.num_blocks = 9;
  for (const Case& c :
       {Case{"roomy", roomy}, Case{"tight pool", tight}, Case{"chunked", chunked}, Case{"unshared", unshared}}) {
    INFO(c.name);
    const RunResult on = check_same_both_ways(c.config, requests, 40, 211);
    // The workload exercises what it claims, and the overlap engaged.
    CHECK(count(on.overlapped) > 0);
    CHECK(on.num_stops > 0);
    const std::string& prefix = on.figures[3];
    if (std::string(c.name) == "tight pool" || std::string(c.name) == "unshared")
      CHECK(prefix.find("preemptions 0 ") == std::string::npos);
    if (std::string(c.name) != "unshared") CHECK(prefix.find("prefix 0 ") == std::string::npos);
    CHECK(prefix.find("cow 0 ") == std::string::npos);
  }
  // With failed rows too (about one in 23).
  const RunResult failing = check_same_both_ways(tight, requests, 40, 23);
  CHECK(failing.num_errors > 0);
  CHECK(count(failing.overlapped) > 0);
}

// The ids of a step's tokens (none for a row that gave no token).
std::vector<std::optional<TokenId>> ids_of(const std::vector<SampledToken>& tokens) {
  std::vector<std::optional<TokenId>> ids;
  for (const SampledToken& t : tokens) ids.push_back(t.id);
  return ids;
}

TEST_CASE("SynchronousSteps: overlap tokens read the ids of the step submitted before") {
  SynchronousSteps steps;
  StepBatch batch;
  batch.num_tokens = 3;
  batch.token_ids = {5, 0, 0};
  std::vector<std::vector<TokenId>> seen;
  std::vector<SampledToken> next = {{11, std::nullopt}, {}};
  const auto run_step = [&](const StepBatch& b) {
    seen.push_back(b.token_ids);
    return next;
  };
  steps.submit(batch, {}, run_step);
  next = {{21, std::nullopt}};
  const std::vector<OverlapToken> overlap_tokens = {{1, 1}, {2, 0}};
  steps.submit(batch, overlap_tokens, run_step);  // row 1 gave no token: kFailedRowInputToken
  CHECK(seen[0] == std::vector<TokenId>{5, 0, 0});
  CHECK(seen[1] == std::vector<TokenId>{5, kFailedRowInputToken, 11});
  CHECK(batch.token_ids == std::vector<TokenId>{5, 0, 0});  // the caller's batch is not changed
  CHECK(ids_of(steps.collect()) == std::vector<std::optional<TokenId>>{11, std::nullopt});
  CHECK(ids_of(steps.collect()) == std::vector<std::optional<TokenId>>{21});
}

TEST_CASE("Scheduler::set_token gives a token appended by the overlap its value") {
  Scheduler scheduler(SchedulerConfig{4, 64}, KvCacheConfig{16, 4, true});
  Sequence seq;
  seq.id = 1;
  seq.token_ids = {1, 2, 3};
  seq.num_prompt_tokens = 3;
  seq.max_tokens = 4;
  scheduler.add(seq);
  const SchedulerOutput out = scheduler.schedule();
  scheduler.on_step_done(out);
  scheduler.append_token(1, 0);
  scheduler.set_token(1, 3, 42);
  CHECK(scheduler.sequence(1).token_ids == std::vector<TokenId>{1, 2, 3, 42});
  // The next step computes it with its value.
  const SchedulerOutput next = scheduler.schedule();
  CHECK(next.batch.token_ids == std::vector<TokenId>{42});
  CHECK(next.batch.positions == std::vector<int32_t>{3});
}
