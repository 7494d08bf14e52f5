// Scheduler: chunked prefill, admission, preemption by recompute (newest first) and
// re-admission with exact block ids and counters, rejection of a request too large for the
// pool, fork with copy-on-write, and the engine's step loop on a backend that computes
// nothing, running random workloads to completion with the KV invariants checked after
// every step.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "engine/engine.h"
#include "sample/rng.h"
#include "sched/prefix_planner.h"
#include "sched/scheduler.h"

using namespace pagedgen;

namespace {

Sequence make_sequence(uint64_t id, std::vector<TokenId> prompt) {
  Sequence seq;
  seq.id = id;
  seq.request_index = static_cast<int64_t>(id);
  seq.num_prompt_tokens = static_cast<int32_t>(prompt.size());
  seq.token_ids = std::move(prompt);
  return seq;
}

std::vector<BlockId> block_table_of(const Scheduler& s, uint64_t seq) {
  const auto t = s.kv().block_table(seq);
  return {t.begin(), t.end()};
}

bool same(const ScheduledSequence& s, uint64_t id, int32_t computed, int32_t num_new, bool logits) {
  return s.seq_id == id && s.num_computed_tokens == computed && s.num_new_tokens == num_new && s.needs_logits == logits;
}

// Every KV and scheduler invariant that must hold between steps.
void check_invariants(const Scheduler& s) {
  const KvCacheManager& kv = s.kv();
  const int32_t bs = kv.block_size();
  std::vector<int32_t> occurrences(static_cast<std::size_t>(kv.num_blocks()), 0);
  int64_t logical = 0;
  std::vector<uint64_t> running(s.running().begin(), s.running().end());
  std::ranges::sort(running);
  REQUIRE(kv.sequence_ids() == running);  // exactly the running sequences hold blocks
  for (uint64_t id : s.running()) {
    const Sequence& seq = s.sequence(id);
    REQUIRE(seq.status == SequenceStatus::Running);
    const auto blocks = kv.block_table(id);
    const int32_t slots = kv.num_slots(id);
    REQUIRE(slots == seq.num_computed_tokens);  // slots are only reserved for computed tokens
    REQUIRE(seq.num_computed_tokens <= seq.num_tokens());
    REQUIRE(std::ssize(blocks) == kv.num_blocks_for_tokens(slots));
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      ++occurrences[static_cast<std::size_t>(blocks[i])];
      const int32_t expected_fill = i + 1 < blocks.size() ? bs : slots - static_cast<int32_t>(i) * bs;
      REQUIRE(kv.filled_slots(blocks[i]) == expected_fill);  // shared blocks: every sharer agrees
    }
    logical += slots;
  }
  for (uint64_t id : s.waiting()) {
    const Sequence& seq = s.sequence(id);
    REQUIRE(seq.status == SequenceStatus::Waiting);
    REQUIRE(seq.num_computed_tokens == 0);
    REQUIRE_FALSE(kv.has_sequence(id));
  }
  int32_t used = 0;
  int32_t shared = 0;
  int64_t filled = 0;
  for (BlockId b = 0; b < kv.num_blocks(); ++b) {
    REQUIRE(kv.pool().ref_count(b) == occurrences[static_cast<std::size_t>(b)]);
    if (occurrences[static_cast<std::size_t>(b)] > 1) ++shared;
    if (occurrences[static_cast<std::size_t>(b)] > 0) {
      ++used;
      filled += kv.filled_slots(b);
    }
  }
  const KvCacheStats stats = kv.stats();
  REQUIRE(stats.num_used_blocks == used);
  REQUIRE(kv.pool().num_shared_blocks() == shared);
  REQUIRE(kv.num_free_blocks() + used == kv.num_blocks());
  REQUIRE(std::ssize(kv.pool().free_queue()) == kv.num_free_blocks());
  REQUIRE(stats.num_filled_slots == filled);
  REQUIRE(stats.num_allocated_slots == int64_t{used} * bs);
  REQUIRE(stats.num_logical_slots == logical);
  REQUIRE(stats.peak_used_blocks >= used);
}

struct FakeRequest {
  std::vector<TokenId> prompt;
  int32_t max_tokens = 1;
  int32_t n = 1;
};

// The "generated" token of a sampling row: a function of the sample's own random bits, so
// preemption and batching cannot change a sample's tokens. Ids >= 1000 never appear in
// prompts.
TokenId fake_token(uint64_t random_bits) { return 1000 + static_cast<TokenId>(random_bits % 97); }

// The tokens sample `sample_index` of request `request` must end with: its stream's draws
// (the engine's seeding rule, run seed 0, seed key = the request's number).
std::vector<TokenId> expected_tokens(std::size_t request, int32_t sample_index, int32_t max_tokens) {
  Rng rng(sample_seed(std::nullopt, 0, std::to_string(request), static_cast<uint64_t>(sample_index)));
  std::vector<TokenId> tokens;
  for (int32_t j = 0; j < max_tokens; ++j) tokens.push_back(fake_token(rng.next_u64()));
  return tokens;
}

// A backend that computes nothing: it answers each sampling row with fake_token and counts
// the block copies it is asked to run.
class FakeBackend final : public Backend {
 public:
  std::string name() const override { return "fake"; }
  std::size_t kv_bytes_per_block(std::size_t block_size) const override { return block_size; }
  void allocate_kv_pool(std::size_t, std::size_t) override {}
  void copy_blocks(std::span<const BlockCopy> copies) override { num_copies += std::ssize(copies); }
  std::vector<SampledToken> step(const StepBatch& batch, const SamplingBatch& sampling) override {
    std::vector<SampledToken> tokens;
    for (const SamplingRow& row : sampling.rows) {
      REQUIRE(row.logits_row < std::ssize(batch.logits_rows));
      tokens.push_back({fake_token(row.random_bits), std::nullopt});
    }
    return tokens;
  }
  int64_t num_copies = 0;
};

// The real engine on FakeBackend, with no tokenizer (samples end at max_tokens), checking
// every KV and scheduler invariant after every step. Requests sample (temperature 1), so
// every token consumes one draw of the sample's stream.
class FakeEngine {
 public:
  FakeEngine(const SchedulerConfig& config, const KvCacheConfig& kv_config, std::vector<FakeRequest> requests)
      : engine_(EngineConfig{.block_size = kv_config.block_size,
                             .num_blocks = kv_config.num_blocks,
                             .max_num_seqs = config.max_num_seqs,
                             .max_batch_tokens = config.max_batch_tokens,
                             .prefix_sharing = kv_config.enable_prefix_caching,
                             .max_model_len = 1 << 20},
                backend_, nullptr),
        requests_(std::move(requests)) {}

  void run() {
    std::vector<PreparedRequest> prepared;
    for (std::size_t r = 0; r < requests_.size(); ++r) {
      PreparedRequest p;
      p.index = r;
      p.seed_key = std::to_string(r);
      p.prompt_ids = requests_[r].prompt;
      p.sampling.temperature = 1.0;
      p.sampling.max_tokens = requests_[r].max_tokens;
      p.sampling.n = requests_[r].n;
      prepared.push_back(std::move(p));
    }
    engine_.add_requests(std::move(prepared));
    check_invariants(engine_.scheduler());
    int64_t steps = 0;
    while (engine_.has_unfinished()) {
      REQUIRE(++steps < 100000);
      StepResult result = engine_.step();
      for (const RequestStart& start : result.started)
        REQUIRE(starts_.emplace(static_cast<uint64_t>(start.request_index), start.num_cached_prompt_tokens).second);
      for (OutputRecord& record : result.finished) {
        REQUIRE(records_.emplace(record_index(record), std::move(record)).second);
      }
      check_invariants(engine_.scheduler());
      for (uint64_t id : engine_.scheduler().running())
        REQUIRE(engine_.scheduler().sequence(id).num_uncomputed_tokens() > 0);
    }
    // Nothing lost: one record per request. Each answered request started once, reporting
    // the cached tokens its record reports; a rejected one never started.
    CHECK(records_.size() == requests_.size());
    for (const auto& [index, record] : records_) {
      const auto start = starts_.find(index);
      if (const auto* output = std::get_if<RequestOutput>(&record)) {
        REQUIRE(start != starts_.end());
        CHECK(start->second == output->cached_tokens);
      } else {
        CHECK(start == starts_.end());
      }
    }
    CHECK(scheduler().kv().stats().num_used_blocks == 0);
    CHECK(scheduler().kv().stats().num_filled_slots == 0);
    CHECK(scheduler().kv().stats().num_logical_slots == 0);
  }

  const Scheduler& scheduler() const { return engine_.scheduler(); }
  const std::map<uint64_t, OutputRecord>& records() const { return records_; }
  int64_t num_rejected() const {
    return std::ranges::count_if(records_,
                                 [](const auto& r) { return std::holds_alternative<RequestError>(r.second); });
  }
  int64_t num_copies() const { return backend_.num_copies; }

 private:
  std::map<uint64_t, int32_t> starts_;  // request -> cached prompt tokens at its start
  FakeBackend backend_;
  Engine engine_;
  std::vector<FakeRequest> requests_;
  std::map<uint64_t, OutputRecord> records_;  // by request
};

}  // namespace

TEST_CASE("chunked prefill: a long prompt is split across steps by max_batch_tokens") {
  Scheduler s({.max_num_seqs = 4, .max_batch_tokens = 4}, {.num_blocks = 16, .block_size = 4});
  std::vector<TokenId> prompt(10);
  std::iota(prompt.begin(), prompt.end(), 1);
  s.add(make_sequence(7, prompt));

  SchedulerOutput out = s.schedule();
  REQUIRE(out.scheduled.size() == 1);
  CHECK(same(out.scheduled[0], 7, 0, 4, false));
  CHECK(block_table_of(s, 7) == std::vector<BlockId>{0});
  s.on_step_done(out);
  out = s.schedule();
  REQUIRE(out.scheduled.size() == 1);
  CHECK(same(out.scheduled[0], 7, 4, 4, false));
  s.on_step_done(out);
  out = s.schedule();
  REQUIRE(out.scheduled.size() == 1);
  CHECK(same(out.scheduled[0], 7, 8, 2, true));
  CHECK(block_table_of(s, 7) == std::vector<BlockId>{0, 1, 2});
  s.on_step_done(out);
  s.append_token(7, 500);
  out = s.schedule();
  REQUIRE(out.scheduled.size() == 1);
  CHECK(same(out.scheduled[0], 7, 10, 1, true));
  s.on_step_done(out);
  check_invariants(s);
  const Sequence done = s.finish(7);
  CHECK(done.token_ids.size() == 11);
  CHECK_FALSE(s.has_unfinished());
  CHECK(s.counters().num_steps == 4);
  CHECK(s.counters().num_computed_tokens == 11);
  CHECK(s.counters().num_computed_prompt_tokens == 10);
  CHECK(s.kv().stats().num_used_blocks == 0);
}

TEST_CASE("prompt scoring: a logits row per scored position, at most max_prompt_logits_rows a step, no cache reads") {
  Scheduler s({.max_num_seqs = 4, .max_batch_tokens = 16, .max_prompt_logits_rows = 5},
              {.num_blocks = 32, .block_size = 4});
  std::vector<TokenId> prompt(10);
  std::iota(prompt.begin(), prompt.end(), 1);
  s.add(make_sequence(0, prompt));  // computes and caches blocks 0 and 1 (tokens 1..8)
  SchedulerOutput out = s.schedule();
  s.on_step_done(out);
  s.append_token(0, 99);

  Sequence scoring = make_sequence(1, prompt);
  scoring.scores_prompt = true;
  s.add(std::move(scoring));
  s.add(make_sequence(2, prompt));
  // Tokens: seq 0's decode [0], seq 1's positions 0..4 [1..5], seq 2's positions 8, 9 [6, 7].
  // Seq 1 computes from 0 though blocks 0 and 1 are cached, and stops at the 5 rows it may
  // score; seq 2 reads them from the cache.
  out = s.schedule();
  REQUIRE(out.scheduled.size() == 3);
  CHECK(same(out.scheduled[0], 0, 10, 1, true));
  CHECK(same(out.scheduled[1], 1, 0, 5, false));
  CHECK(same(out.scheduled[2], 2, 8, 2, true));
  CHECK(out.batch.logits_rows == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 7});
  CHECK(out.scheduled[0].first_logits_row == 0);
  CHECK(out.scheduled[1].first_logits_row == 1);
  CHECK(out.scheduled[1].num_prompt_logits_rows == 5);
  CHECK(out.scheduled[2].first_logits_row == 6);
  CHECK(out.scheduled[2].num_prompt_logits_rows == 0);
  CHECK(s.sequence(1).num_cached_prompt_tokens == 0);
  CHECK(s.sequence(2).num_cached_prompt_tokens == 8);
  s.on_step_done(out);
  s.append_token(0, 98);
  s.append_token(2, 97);
  // Seq 1's positions 5..9: 5..8 scored (9, the last prompt token, scores nothing: its row
  // samples the first generated token).
  out = s.schedule();
  REQUIRE(out.scheduled.size() == 3);
  CHECK(same(out.scheduled[1], 1, 5, 5, true));
  CHECK(out.scheduled[1].num_prompt_logits_rows == 4);
  CHECK(out.scheduled[1].first_logits_row == 1);
  CHECK(out.batch.logits_rows == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6});
  s.on_step_done(out);
  check_invariants(s);
}

TEST_CASE("running sequences get their tokens first, then admissions fill the budget") {
  Scheduler s({.max_num_seqs = 4, .max_batch_tokens = 6}, {.num_blocks = 16, .block_size = 4});
  s.add(make_sequence(1, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  s.add(make_sequence(2, {20, 21, 22}));
  SchedulerOutput out = s.schedule();
  REQUIRE(out.scheduled.size() == 1);
  CHECK(same(out.scheduled[0], 1, 0, 6, false));
  CHECK(s.waiting().size() == 1);
  s.on_step_done(out);

  out = s.schedule();
  REQUIRE(out.scheduled.size() == 2);
  CHECK(same(out.scheduled[0], 1, 6, 4, true));
  CHECK(same(out.scheduled[1], 2, 0, 2, false));  // admitted with what is left of the budget
  CHECK(block_table_of(s, 2) == std::vector<BlockId>{3});
  s.on_step_done(out);
  s.append_token(1, 600);

  out = s.schedule();
  REQUIRE(out.scheduled.size() == 2);
  CHECK(same(out.scheduled[0], 1, 10, 1, true));
  CHECK(same(out.scheduled[1], 2, 2, 1, true));
  CHECK(out.num_batched_tokens == 2);
  s.on_step_done(out);
  check_invariants(s);
}

TEST_CASE("max_num_seqs bounds admission") {
  Scheduler s({.max_num_seqs = 2, .max_batch_tokens = 100}, {.num_blocks = 16, .block_size = 4});
  for (uint64_t id = 1; id <= 3; ++id) s.add(make_sequence(id, {static_cast<TokenId>(id)}));
  const SchedulerOutput out = s.schedule();
  CHECK(out.scheduled.size() == 2);
  CHECK(s.running() == std::vector<uint64_t>{1, 2});
  CHECK(s.waiting() == std::deque<uint64_t>{3});
}

TEST_CASE("preemption by recompute of the newest sequence, and its re-admission") {
  // Block size 2, 4 blocks: two 3-token prompts fill the pool after one generated token each.
  Scheduler s({.max_num_seqs = 4, .max_batch_tokens = 64}, {.num_blocks = 4, .block_size = 2});
  s.add(make_sequence(1, {1, 2, 3}));
  s.add(make_sequence(2, {4, 5, 6}));

  SchedulerOutput out = s.schedule();  // step 1: both prefill
  REQUIRE(out.scheduled.size() == 2);
  CHECK(same(out.scheduled[0], 1, 0, 3, true));
  CHECK(same(out.scheduled[1], 2, 0, 3, true));
  CHECK(block_table_of(s, 1) == std::vector<BlockId>{0, 1});
  CHECK(block_table_of(s, 2) == std::vector<BlockId>{2, 3});
  s.on_step_done(out);
  s.append_token(1, 10);
  s.append_token(2, 20);

  out = s.schedule();  // step 2: both decode into their partial last blocks
  REQUIRE(out.scheduled.size() == 2);
  CHECK(out.preempted.empty());
  s.on_step_done(out);  // blocks 1 = [3 10] and 3 = [6 20] become full and cached
  s.append_token(1, 11);
  s.append_token(2, 21);
  check_invariants(s);

  out = s.schedule();  // step 3: sequence 1 needs a block: sequence 2 (newest) is preempted
  CHECK(out.preempted == std::vector<uint64_t>{2});
  REQUIRE(out.scheduled.size() == 1);
  CHECK(same(out.scheduled[0], 1, 4, 1, true));
  // 2's blocks were freed tail first (3, then 2): 3 is reused first, evicting its entry.
  CHECK(block_table_of(s, 1) == std::vector<BlockId>{0, 1, 3});
  CHECK(s.kv().pool().free_queue() == std::vector<BlockId>{2});
  CHECK(s.kv().stats().num_evictions == 1);
  CHECK(s.waiting() == std::deque<uint64_t>{2});
  CHECK(s.sequence(2).num_computed_tokens == 0);
  CHECK(s.sequence(2).num_preemptions == 1);
  CHECK(s.counters().num_preemptions == 1);
  s.on_step_done(out);
  s.append_token(1, 12);
  check_invariants(s);

  // Step 4: 2 would hit block 2 ([4 5], count 0) but needs 2 more blocks: it waits.
  out = s.schedule();
  REQUIRE(out.scheduled.size() == 1);
  CHECK(same(out.scheduled[0], 1, 5, 1, true));
  CHECK(s.waiting() == std::deque<uint64_t>{2});
  s.on_step_done(out);
  s.append_token(1, 13);
  s.finish(1);
  CHECK(s.kv().pool().free_queue() == std::vector<BlockId>{2, 3, 1, 0});

  // Step 5: re-admitted from its cached first block; tokens 2..4 computed, 2 of them again.
  out = s.schedule();
  REQUIRE(out.scheduled.size() == 1);
  CHECK(same(out.scheduled[0], 2, 2, 3, true));
  CHECK(block_table_of(s, 2) == std::vector<BlockId>{2, 3, 1});
  CHECK(s.kv().stats().num_evictions == 3);  // 1's cached blocks 3 ([11 12]) and 1 ([3 10])
  s.on_step_done(out);
  check_invariants(s);
  CHECK(s.counters().num_recomputed_tokens == 2);  // positions 2, 3 (4 was never computed)
  CHECK(s.counters().num_computed_tokens == 3 + 3 + 1 + 1 + 1 + 1 + 3);
  CHECK(s.counters().num_computed_prompt_tokens == 3 + 3 + 1);
  const KvCacheStats stats = s.kv().stats();
  CHECK(stats.num_lookup_blocks == 1 + 1 + 2);  // admissions only: 3-token prompts, then 5 tokens
  CHECK(stats.num_hit_blocks == 1);
  CHECK(stats.num_hit_tokens == 2);
  CHECK(s.sequence(2).num_cached_prompt_tokens == 0);  // from its first admission
}

TEST_CASE("several preemptions in one step: newest first, older ahead in the queue") {
  Scheduler s({.max_num_seqs = 4, .max_batch_tokens = 64}, {.num_blocks = 3, .block_size = 2});
  for (uint64_t id = 1; id <= 3; ++id) s.add(make_sequence(id, {static_cast<TokenId>(id)}));
  for (int step = 0; step < 2; ++step) {
    const SchedulerOutput out = s.schedule();
    REQUIRE(out.scheduled.size() == 3);
    s.on_step_done(out);
    for (uint64_t id = 1; id <= 3; ++id) s.append_token(id, 100);
  }
  CHECK(block_table_of(s, 1) == std::vector<BlockId>{0});
  CHECK(block_table_of(s, 3) == std::vector<BlockId>{2});
  // Every sequence now needs a second block and none is free: 1 takes 3's, 2 preempts itself.
  const SchedulerOutput out = s.schedule();
  CHECK(out.preempted == std::vector<uint64_t>{3, 2});
  REQUIRE(out.scheduled.size() == 1);
  CHECK(same(out.scheduled[0], 1, 2, 1, true));
  CHECK(block_table_of(s, 1) == std::vector<BlockId>{0, 2});
  CHECK(s.waiting() == std::deque<uint64_t>{2, 3});
  CHECK(s.running() == std::vector<uint64_t>{1});
  CHECK(s.counters().num_preemptions == 2);
  s.on_step_done(out);
  check_invariants(s);
}

TEST_CASE("a sequence alone that outgrows the pool preempts itself, then is rejected; nothing deadlocks") {
  Scheduler s({.max_num_seqs = 4, .max_batch_tokens = 64}, {.num_blocks = 2, .block_size = 2});
  s.add(make_sequence(1, {1, 2, 3}));
  SchedulerOutput out = s.schedule();
  s.on_step_done(out);
  s.append_token(1, 10);
  out = s.schedule();
  s.on_step_done(out);
  s.append_token(1, 11);
  out = s.schedule();
  CHECK(out.scheduled.empty());
  CHECK(out.preempted == std::vector<uint64_t>{1});
  CHECK(s.has_unfinished());
  out = s.schedule();
  REQUIRE(out.rejected.size() == 1);
  CHECK(out.rejected[0].sequence.id == 1);
  CHECK(out.rejected[0].sequence.token_ids == std::vector<TokenId>{1, 2, 3, 10, 11});
  CHECK(out.rejected[0].reason.find("needs 3 KV blocks") != std::string::npos);
  CHECK(out.rejected[0].reason.find("pool has 2") != std::string::npos);
  CHECK_FALSE(s.has_unfinished());
  CHECK(s.counters().num_rejected == 1);
}

TEST_CASE("a request too large for the whole pool is rejected and the others go on") {
  Scheduler s({.max_num_seqs = 4, .max_batch_tokens = 64}, {.num_blocks = 4, .block_size = 4});
  std::vector<TokenId> big(16);  // 16 tokens + the next one need 5 blocks of 4
  std::iota(big.begin(), big.end(), 1);
  s.add(make_sequence(1, big));
  s.add(make_sequence(2, {7, 8, 9}));
  const SchedulerOutput out = s.schedule();
  REQUIRE(out.rejected.size() == 1);
  CHECK(out.rejected[0].sequence.id == 1);
  CHECK(out.rejected[0].reason.find("larger KV pool") != std::string::npos);  // core names the setting, never a flag
  REQUIRE(out.scheduled.size() == 1);
  CHECK(same(out.scheduled[0], 2, 0, 3, true));
  CHECK(block_table_of(s, 2) == std::vector<BlockId>{0});
  // A 15-token prompt still fits alone: 16 slots with its first generated token.
  std::vector<TokenId> fits(15);
  std::iota(fits.begin(), fits.end(), 100);
  Scheduler t({.max_num_seqs = 4, .max_batch_tokens = 64}, {.num_blocks = 4, .block_size = 4});
  t.add(make_sequence(1, fits));
  CHECK(t.schedule().rejected.empty());
}

TEST_CASE("fork after the prompt: children share its blocks and copy the partial one on write") {
  Scheduler s({.max_num_seqs = 4, .max_batch_tokens = 64}, {.num_blocks = 8, .block_size = 4});
  s.add(make_sequence(1, {1, 2, 3, 4, 5}));
  SchedulerOutput out = s.schedule();
  s.on_step_done(out);
  s.append_token(1, 50);
  for (uint64_t child_id : {2, 3}) {
    Sequence child = make_sequence(child_id, {1, 2, 3, 4, 5});
    child.sample_index = static_cast<int32_t>(child_id) - 1;
    child.token_ids.push_back(static_cast<TokenId>(50 + child_id));
    s.fork(1, std::move(child));
  }
  CHECK(s.running() == std::vector<uint64_t>{1, 2, 3});
  CHECK(s.sequence(3).num_computed_tokens == 5);
  CHECK(s.kv().pool().ref_count(1) == 3);
  check_invariants(s);
  out = s.schedule();
  REQUIRE(out.scheduled.size() == 3);
  CHECK(same(out.scheduled[2], 3, 5, 1, true));
  REQUIRE(out.block_copies.size() == 2);
  CHECK((out.block_copies[0].src == 1 && out.block_copies[0].dst == 2));
  CHECK((out.block_copies[1].src == 1 && out.block_copies[1].dst == 3));
  CHECK(block_table_of(s, 1) == std::vector<BlockId>{0, 2});
  CHECK(block_table_of(s, 2) == std::vector<BlockId>{0, 3});
  CHECK(block_table_of(s, 3) == std::vector<BlockId>{0, 1});
  s.on_step_done(out);
  check_invariants(s);
  CHECK(s.kv().stats().num_cow_copies == 2);
}

TEST_CASE("random workloads run to completion with every invariant after every step") {
  int64_t preemptions = 0, copies = 0, rejections = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    std::mt19937 rng(seed);
    const int32_t block_size = std::vector<int32_t>{1, 2, 4, 16}[seed % 4];
    const bool sharing = seed % 3 != 0;
    // A few shared prefixes so that prefix hits, forks and evictions all happen.
    std::vector<std::vector<TokenId>> prefixes(4);
    for (auto& p : prefixes) {
      p.resize(rng() % 20);
      for (auto& t : p) t = static_cast<TokenId>(rng() % 50);
    }
    std::vector<FakeRequest> requests(40);
    for (auto& r : requests) {
      r.prompt = prefixes[rng() % prefixes.size()];
      const int suffix = 1 + static_cast<int>(rng() % 12);
      for (int i = 0; i < suffix; ++i) r.prompt.push_back(static_cast<TokenId>(rng() % 50));
      r.max_tokens = 1 + static_cast<int32_t>(rng() % 20);
      r.n = 1 + static_cast<int32_t>(rng() % 3);
    }
    // Pool: room for the longest sequence alone (<= 52 tokens) plus a little.
    const int32_t num_blocks = (64 + block_size - 1) / block_size + static_cast<int32_t>(rng() % 4);
    const SchedulerConfig config{.max_num_seqs = 1 + static_cast<int32_t>(rng() % 8),
                                 .max_batch_tokens = 1 + static_cast<int32_t>(rng() % 40)};
    CAPTURE(seed);
    FakeEngine engine(config, {.num_blocks = num_blocks, .block_size = block_size, .enable_prefix_caching = sharing},
                      requests);
    engine.run();
    // Every sample finished with exactly its own tokens.
    std::size_t num_samples = 0, num_finished = 0;
    for (std::size_t r = 0; r < requests.size(); ++r) {
      const auto* output = std::get_if<RequestOutput>(&engine.records().at(r));
      REQUIRE(output != nullptr);
      num_finished += output->choices.size();
      for (int32_t k = 0; k < requests[r].n; ++k) {
        CHECK(output->choices.at(static_cast<std::size_t>(k)).token_ids ==
              expected_tokens(r, k, requests[r].max_tokens));
        ++num_samples;
      }
    }
    CHECK(num_finished == num_samples);
    preemptions += engine.scheduler().counters().num_preemptions;
    copies += engine.num_copies();
    rejections += engine.num_rejected();
    const KvCacheStats kv_stats = engine.scheduler().kv().stats();
    CHECK(engine.num_copies() == kv_stats.num_cow_copies + kv_stats.num_partial_hits);
  }
  CHECK(preemptions > 0);  // the small pools do force preemption
  CHECK(copies > 0);
  CHECK(rejections == 0);
}

TEST_CASE("prefix-ordered queue: prompt tokens computed equal the planner's figure") {
  // 3 documents of 37 tokens, 4 questions each of 5 tokens (the first 2 shared within a
  // document), shuffled in the input; block size 8.
  std::mt19937 rng(5);
  std::vector<FakeRequest> requests;
  for (TokenId doc = 0; doc < 3; ++doc) {
    std::vector<TokenId> text(37);
    for (auto& t : text) t = static_cast<TokenId>(rng() % 100);
    for (TokenId q = 0; q < 4; ++q) {
      FakeRequest r;
      r.prompt = text;
      r.prompt.insert(r.prompt.end(), {500, 501, static_cast<TokenId>(600 + q), 700, static_cast<TokenId>(800 + doc)});
      r.max_tokens = 3;
      requests.push_back(r);
    }
  }
  std::ranges::shuffle(requests, rng);
  PrefixPlanner planner;
  for (const auto& r : requests) planner.add(r.prompt);
  const PrefixPlan plan = planner.plan(8);
  CHECK(plan.num_prompt_tokens == 12 * 42);
  CHECK(plan.num_distinct_prompt_tokens == 3 * (37 + 2 + 4 * 3));
  CHECK(plan.num_prefix_groups == 3);
  // Per document: the first request computes 42; each other shares 39 tokens, 4 full blocks
  // (32 tokens) and 7 copied from the first one's fifth block (its prompt fills it), and
  // computes 3.
  CHECK(plan.num_planned_prefill_tokens == 3 * (42 + 3 * 3));
  CHECK(plan.num_planned_prefill_tokens == plan.num_distinct_prompt_tokens);

  for (int32_t max_batch_tokens : {16, 1000}) {
    for (bool sharing : {true, false}) {
      CAPTURE(max_batch_tokens);
      CAPTURE(sharing);
      FakeEngine engine({.max_num_seqs = 8, .max_batch_tokens = max_batch_tokens},
                        {.num_blocks = 200, .block_size = 8, .enable_prefix_caching = sharing}, requests);
      engine.run();
      const SchedulerCounters& counters = engine.scheduler().counters();
      const KvCacheStats stats = engine.scheduler().kv().stats();
      CHECK(counters.num_preemptions == 0);
      CHECK(stats.num_evictions == 0);
      if (sharing) {
        CHECK(counters.num_computed_prompt_tokens == plan.num_planned_prefill_tokens);
        CHECK(stats.num_hit_tokens == plan.num_prompt_tokens - plan.num_planned_prefill_tokens);
        CHECK(stats.num_hit_blocks == 3 * 3 * 4);
        CHECK(stats.num_partial_hits == 3 * 3);
        CHECK(stats.num_partial_tokens == 3 * 3 * 7);
        CHECK(stats.num_lookup_blocks == 12 * 5);  // (42 - 1) / 8 per request
      } else {
        CHECK(counters.num_computed_prompt_tokens == plan.num_prompt_tokens);
        CHECK(stats.num_hit_tokens == 0);
      }
    }
  }
}

TEST_CASE("n > 1 in a pool that holds one sample at a time: the samples run in turn, nothing aborts") {
  // A case that once aborted the run: two samples of 22 tokens in 2 blocks of 16. The second
  // sample is preempted, then re-admitted alone; its prompt partly matches the first
  // sample's cached block, but holding that block to copy from leaves no room, so it
  // computes the tokens.
  for (int32_t max_tokens : {20, 30}) {
    CAPTURE(max_tokens);
    FakeEngine engine({.max_num_seqs = 4, .max_batch_tokens = 64},
                      {.num_blocks = 2, .block_size = 16, .enable_prefix_caching = true},
                      {FakeRequest{{1, 2}, max_tokens, 2}});
    engine.run();
    const auto* output = std::get_if<RequestOutput>(&engine.records().at(0));
    REQUIRE(output != nullptr);
    REQUIRE(output->choices.size() == 2);
    for (int32_t k = 0; k < 2; ++k)
      CHECK(output->choices[static_cast<std::size_t>(k)].token_ids == expected_tokens(0, k, max_tokens));
    CHECK(engine.scheduler().counters().num_preemptions > 0);
  }
}
