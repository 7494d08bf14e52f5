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
