// RunStats: its JSON reads back to the same figures, and the stats of shards add up
// (counts and times summed, peaks the largest), as `pagedgen merge --stats` writes them.
#include <doctest/doctest.h>

#include "job/run_stats.h"
#include "util/error.h"

using namespace pagedgen;

namespace {

RunStats shard_stats(int64_t scale) {
  RunStats s;
  s.job.model = "m.gguf";
  s.engine.backend = "cpu";
  s.engine.block_size = 16;
  s.engine.kv_bytes_per_block = 1024;
  s.engine.num_pool_blocks = 100;
  s.engine.max_model_len = 2048;
  s.job.num_lines = 10 * scale;
  s.job.num_requests = 9 * scale;
  s.job.num_failed_lines = scale;
  s.engine.num_generated_tokens = 50 * scale;
  s.engine.prefix_hit_tokens = 7 * scale;
  s.engine.generate_seconds = 0.5 * static_cast<double>(scale);
  s.engine.add_snapshot(KvSnapshot{3 * scale, 48 * scale, 40 * scale, 40 * scale, 48 * scale, scale, 0, 0});
  s.engine.add_snapshot(KvSnapshot{5 * scale, 80 * scale, 70 * scale, 75 * scale, 80 * scale, 0, 0, 0});
  return s;
}

}  // namespace

TEST_CASE("stats JSON reads back exactly") {
  const RunStats s = shard_stats(3);
  CHECK(RunStats::from_json(s.to_json()).to_json() == s.to_json());
  CHECK_THROWS_AS(RunStats::from_json("{\"model\": \"m\"}"), Error);
}

TEST_CASE("shard stats add up") {
  RunStats total = shard_stats(1);
  total.add_run(shard_stats(2));
  CHECK(total.job.num_lines == 30);
  CHECK(total.job.num_requests == 27);
  CHECK(total.num_failed_requests() == 3);
  CHECK(total.engine.num_generated_tokens == 150);
  CHECK(total.engine.prefix_hit_tokens == 21);
  CHECK(total.engine.num_steps == 4);
  CHECK(total.engine.sum_used_blocks == 3 * (3 + 5));
  CHECK(total.engine.peak_used_blocks == 10);
  CHECK(total.engine.peak_shared_blocks == 2);
  CHECK(total.engine.generate_seconds == doctest::Approx(1.5));
  RunStats other_model = shard_stats(1);
  other_model.job.model = "other.gguf";
  CHECK_THROWS_AS(total.add_run(other_model), Error);
}

TEST_CASE("stats say what they cover: the whole output, a resumed run's part, or a run stopped early") {
  RunStats whole = shard_stats(1);
  whole.job.job_key = "00000000000000aa";
  whole.job.shard = "0/2";
  CHECK(whole.covers_whole_output());
  CHECK(whole.coverage_note() == "the figures cover all 9 requests of the output");
  CHECK(whole.summary().starts_with("pagedgen: 9 requests"));

  RunStats resumed = whole;
  resumed.job.num_earlier_requests = 30;
  CHECK_FALSE(resumed.covers_whole_output());
  CHECK(resumed.coverage_note().starts_with("the figures cover the 9 requests this run answered; 30 more lines"));
  CHECK(resumed.summary().starts_with("pagedgen: the figures cover the 9 requests this run answered"));
  const RunStats back = RunStats::from_json(resumed.to_json());
  CHECK(back.job.num_earlier_requests == 30);
  CHECK(back.job.job_key == "00000000000000aa");
  CHECK(back.job.shard == "0/2");
  CHECK(back.to_json() == resumed.to_json());

  RunStats stopped = whole;
  stopped.job.num_unfinished_requests = 33;
  CHECK(stopped.coverage_note().find("stopped early, with 33 requests read but not finished") != std::string::npos);
}

TEST_CASE("the stats of another job do not add up") {
  RunStats a = shard_stats(1);
  a.job.job_key = "00000000000000aa";
  RunStats b = shard_stats(2);
  b.job.job_key = "00000000000000bb";
  CHECK_THROWS_WITH_AS(a.add_run(b), doctest::Contains("different jobs"), Error);
  b.job.job_key = a.job.job_key;
  b.job.num_earlier_requests = 4;
  a.add_run(b);
  CHECK(a.job.num_earlier_requests == 4);
  CHECK_FALSE(a.covers_whole_output());
}

TEST_CASE("the per-kind KV figures of a model with sliding windows read back and add up") {
  const auto windowed = [](int64_t scale) {
    RunStats s = shard_stats(scale);
    s.engine.kinds = {{.window = 0,
                       .kv_bytes_per_block = 256,
                       .num_pool_blocks = 200,
                       .peak_used_blocks = 4 * scale,
                       .sum_used_blocks = 7 * scale,
                       .peak_filled_slots = 60 * scale,
                       .peak_sequence_positions = 60 * scale},
                      {.window = 32,
                       .kv_bytes_per_block = 768,
                       .num_pool_blocks = 40,
                       .peak_used_blocks = 3,
                       .sum_used_blocks = 5 * scale,
                       .peak_filled_slots = 40,
                       .peak_sequence_positions = 40 + scale}};
    s.engine.peak_full_attention_kv_bytes = 4096 * scale;
    return s;
  };
  const RunStats one = windowed(1);
  CHECK(RunStats::from_json(one.to_json()).to_json() == one.to_json());

  // Shards 1 and 2: sums add (7 + 14, 5 + 10), peaks take the larger (8, 3; 120, 40; 120, 42),
  // the pool stays 200 x 256 + 40 x 768 = 81,920 bytes.
  RunStats total = RunStats::from_json(windowed(1).to_json());
  total.add_run(RunStats::from_json(windowed(2).to_json()));
  REQUIRE(total.engine.kinds.size() == 2);
  CHECK(total.engine.kinds[0].sum_used_blocks == 21);
  CHECK(total.engine.kinds[1].sum_used_blocks == 15);
  CHECK(total.engine.kinds[0].peak_used_blocks == 8);
  CHECK(total.engine.kinds[1].peak_used_blocks == 3);
  CHECK(total.engine.kinds[0].peak_sequence_positions == 120);
  CHECK(total.engine.kinds[1].peak_sequence_positions == 42);
  CHECK(total.engine.kinds[1].peak_filled_slots == 40);
  CHECK(total.engine.peak_full_attention_kv_bytes == 8192);
  CHECK(total.to_json().find("\"pool_bytes\": 81920") != std::string::npos);

  RunStats other_window = windowed(1);
  other_window.engine.kinds[1].window = 64;
  CHECK_THROWS_WITH_AS(total.add_run(other_window), doctest::Contains("KV layer kind 1: window 32 vs 64"), Error);
  CHECK_THROWS_WITH_AS(total.add_run(shard_stats(1)), doctest::Contains("2 vs 0 KV layer kinds"), Error);
}
