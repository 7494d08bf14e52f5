// RunStats read back from its JSON and added up over runs: what `pagedgen merge` does with
// the stats files of shards. The tables below say, for every figure the JSON holds, where
// it is ("object.key") and how runs combine it (summed, or the larger peak).
#include <simdjson.h>

#include <algorithm>

#include "job/run_stats.h"
#include "util/error.h"

namespace pagedgen {

namespace {

template <typename Stats, typename T>
struct Field {
  const char* object;  // nullptr: a top-level key
  const char* key;
  T Stats::*member;
};

// Counts and times that add up over runs. The failed count is read as the job's: a stats
// file does not tell bad lines from rejected requests.
constexpr Field<JobStats, int64_t> kJobCounts[] = {
    {"requests", "lines", &JobStats::num_lines},
    {"requests", "blank_lines", &JobStats::num_blank_lines},
    {"requests", "requests", &JobStats::num_requests},
    {"requests", "failed", &JobStats::num_failed_lines},
    {"coverage", "requests_earlier", &JobStats::num_earlier_requests},
    {"coverage", "requests_unfinished", &JobStats::num_unfinished_requests},
};
constexpr Field<JobStats, double> kJobSeconds[] = {
    {"time_seconds", "load", &JobStats::load_seconds},
    {"time_seconds", "prepare", &JobStats::prepare_seconds},
};
constexpr Field<EngineStats, int64_t> kEngineCounts[] = {
    {"requests", "samples", &EngineStats::num_samples},
    {"tokens", "prompt", &EngineStats::num_prompt_tokens},
    {"tokens", "distinct_prompt", &EngineStats::num_distinct_prompt_tokens},
    {"tokens", "prompt_computed", &EngineStats::num_computed_prompt_tokens},
    {"tokens", "generated", &EngineStats::num_generated_tokens},
    {"tokens", "prefix_groups", &EngineStats::num_prefix_groups},
    {"blocks", "steps", &EngineStats::num_steps},
    {"blocks", "used_sum", &EngineStats::sum_used_blocks},
    {"slots", "allocated_sum", &EngineStats::sum_allocated_slots},
    {"slots", "filled_sum", &EngineStats::sum_filled_slots},
    {"slots", "logical_sum", &EngineStats::sum_logical_slots},
    {"slots", "sequence_allocated_sum", &EngineStats::sum_sequence_slots},
    {"naive_reservation", "max_model_len_slots_sum", &EngineStats::sum_naive_max_len_slots},
    {"naive_reservation", "request_slots_sum", &EngineStats::sum_naive_request_slots},
    {"prefix_cache", "lookup_blocks", &EngineStats::prefix_lookup_blocks},
    {"prefix_cache", "hit_blocks", &EngineStats::prefix_hit_blocks},
    {"prefix_cache", "hit_tokens", &EngineStats::prefix_hit_tokens},
    {"prefix_cache", "partial_hits", &EngineStats::prefix_partial_hits},
    {"prefix_cache", "partial_hit_tokens", &EngineStats::prefix_partial_tokens},
    {"prefix_cache", "key_collisions", &EngineStats::prefix_key_collisions},
    {"prefix_cache", "evictions", &EngineStats::evictions},
    {"copy_on_write", "copies", &EngineStats::cow_copies},
    {"preemption", "preemptions", &EngineStats::preemptions},
    {"preemption", "recomputed_tokens", &EngineStats::recomputed_tokens},
};
constexpr Field<EngineStats, double> kEngineSeconds[] = {
    {"time_seconds", "generate", &EngineStats::generate_seconds},
    {"time_seconds", "prefill_steps", &EngineStats::prefill_seconds},
    {"time_seconds", "decode_steps", &EngineStats::decode_seconds},
};
// Peaks: the larger one.
constexpr Field<EngineStats, int64_t> kEnginePeaks[] = {
    {"blocks", "peak_used", &EngineStats::peak_used_blocks},
    {"blocks", "peak_shared", &EngineStats::peak_shared_blocks},
    {"blocks", "peak_kv_bytes", &EngineStats::peak_kv_bytes},
    {"slots", "peak_allocated", &EngineStats::peak_allocated_slots},
    {"slots", "peak_filled", &EngineStats::peak_filled_slots},
    {"naive_reservation", "peak_max_model_len_slots", &EngineStats::peak_naive_max_len_slots},
    {"naive_reservation", "peak_request_slots", &EngineStats::peak_naive_request_slots},
};
// Per layer kind (the kv_kinds array of a model with sliding windows): settings, counts, peaks.
constexpr Field<KvKindFigures, int64_t> kKindSettings[] = {
    {nullptr, "window", &KvKindFigures::window},
    {nullptr, "kv_bytes_per_block", &KvKindFigures::kv_bytes_per_block},
    {nullptr, "pool_blocks", &KvKindFigures::num_pool_blocks},
};
constexpr Field<KvKindFigures, int64_t> kKindCounts[] = {
    {nullptr, "used_sum", &KvKindFigures::sum_used_blocks},
};
constexpr Field<KvKindFigures, int64_t> kKindPeaks[] = {
    {nullptr, "peak_used", &KvKindFigures::peak_used_blocks},
    {nullptr, "peak_filled_slots", &KvKindFigures::peak_filled_slots},
    {nullptr, "peak_sequence_positions", &KvKindFigures::peak_sequence_positions},
};

// The engine's settings: equal in runs that add up.
constexpr Field<EngineStats, int64_t> kEngineSettings[] = {
    {nullptr, "block_size", &EngineStats::block_size},
    {nullptr, "kv_bytes_per_block", &EngineStats::kv_bytes_per_block},
    {nullptr, "pool_blocks", &EngineStats::num_pool_blocks},
    {nullptr, "max_model_len", &EngineStats::max_model_len},
};

template <typename Stats, typename T, std::size_t N>
void add_fields(const Field<Stats, T> (&fields)[N], Stats& sum, const Stats& add) {
  for (const auto& f : fields) sum.*f.member += add.*f.member;
}

// The parsed stats JSON, read field by field; every miss throws Error naming the field.
class StatsJson {
 public:
  explicit StatsJson(std::string_view json) {
    if (parser_.parse(json.data(), json.size()).get(root_) != simdjson::SUCCESS) fail("the stats are not valid JSON");
  }

  template <typename T>
  T get(const char* object, const char* key, const char* kind) {
    T value{};
    if (element(object, key).get(value) != simdjson::SUCCESS)
      fail("stats field {}{}{} is not {}", object ? object : "", object ? "." : "", key, kind);
    return value;
  }

  template <typename Stats, std::size_t N>
  void read(const Field<Stats, int64_t> (&fields)[N], Stats& stats) {
    for (const auto& f : fields) stats.*f.member = get<int64_t>(f.object, f.key, "an integer");
  }
  template <typename Stats, std::size_t N>
  void read(const Field<Stats, double> (&fields)[N], Stats& stats) {
    for (const auto& f : fields) stats.*f.member = get<double>(f.object, f.key, "a number");
  }

  // Each element of the array `object`.`key` as its own StatsJson root (none when absent).
  template <typename F>
  void for_each_in(const char* object, const char* key, F&& each) {
    simdjson::dom::array items;
    if (root_[object].error() == simdjson::NO_SUCH_FIELD) return;
    if (root_[object][key].get(items) != simdjson::SUCCESS) fail("stats field {}.{} is not an array", object, key);
    for (const simdjson::dom::element item : items) {
      StatsJson one(item);
      each(one);
    }
  }

 private:
  explicit StatsJson(simdjson::dom::element root) : root_(root) {}

  simdjson::dom::element element(const char* object, const char* key) {
    simdjson::dom::element value;
    if ((object ? root_[object][key] : root_[key]).get(value) != simdjson::SUCCESS)
      fail("the stats have no {}{}{}", object ? object : "", object ? "." : "", key);
    return value;
  }

  simdjson::dom::parser parser_;
  simdjson::dom::element root_;
};

}  // namespace

void RunStats::add_run(const RunStats& o) {
  const EngineStats& e = engine;
  if (job.job_key != o.job.job_key)
    fail(
        "the stats are of different jobs (job key {} vs {}: other input, model or settings); merge only the stats of "
        "the shards of one job",
        job.job_key, o.job.job_key);
  if (job.model != o.job.model || e.backend != o.engine.backend || e.block_size != o.engine.block_size ||
      e.num_pool_blocks != o.engine.num_pool_blocks)
    fail(
        "the stats are of different runs (model {} vs {}, backend {} vs {}, block size {} vs {}, pool {} vs {} "
        "blocks); merge only shards of one job",
        job.model, o.job.model, e.backend, o.engine.backend, e.block_size, o.engine.block_size, e.num_pool_blocks,
        o.engine.num_pool_blocks);
  add_fields(kJobCounts, job, o.job);
  add_fields(kJobSeconds, job, o.job);
  add_fields(kEngineCounts, engine, o.engine);
  add_fields(kEngineSeconds, engine, o.engine);
  engine.num_rejected_requests += o.engine.num_rejected_requests;
  for (const auto& f : kEnginePeaks) engine.*f.member = std::max(engine.*f.member, o.engine.*f.member);
  if (engine.kinds.size() != o.engine.kinds.size())
    fail("the stats are of different runs ({} vs {} KV layer kinds); merge only shards of one job", engine.kinds.size(),
         o.engine.kinds.size());
  for (std::size_t i = 0; i < engine.kinds.size(); ++i) {
    KvKindFigures& k = engine.kinds[i];
    const KvKindFigures& ok = o.engine.kinds[i];
    for (const auto& f : kKindSettings)
      if (k.*f.member != ok.*f.member)
        fail("the stats are of different runs (KV layer kind {}: {} {} vs {}); merge only shards of one job", i, f.key,
             k.*f.member, ok.*f.member);
    add_fields(kKindCounts, k, ok);
    for (const auto& f : kKindPeaks) k.*f.member = std::max(k.*f.member, ok.*f.member);
  }
  engine.peak_full_attention_kv_bytes =
      std::max(engine.peak_full_attention_kv_bytes, o.engine.peak_full_attention_kv_bytes);
}

RunStats RunStats::from_json(std::string_view json) {
  StatsJson in(json);
  RunStats s;
  s.job.model = std::string(in.get<std::string_view>(nullptr, "model", "a string"));
  s.job.job_key = std::string(in.get<std::string_view>("job", "key", "a string"));
  s.job.shard = std::string(in.get<std::string_view>("job", "shard", "a string"));
  s.engine.backend = std::string(in.get<std::string_view>(nullptr, "backend", "a string"));
  s.engine.prefix_sharing = in.get<bool>(nullptr, "prefix_sharing", "a boolean");
  in.read(kEngineSettings, s.engine);
  in.read(kJobCounts, s.job);
  in.read(kEngineCounts, s.engine);
  in.read(kEnginePeaks, s.engine);
  in.read(kJobSeconds, s.job);
  in.read(kEngineSeconds, s.engine);
  in.for_each_in("kv_kinds", "kinds", [&](StatsJson& kind) {
    KvKindFigures k;
    kind.read(kKindSettings, k);
    kind.read(kKindCounts, k);
    kind.read(kKindPeaks, k);
    s.engine.kinds.push_back(k);
  });
  if (!s.engine.kinds.empty())
    s.engine.peak_full_attention_kv_bytes = in.get<int64_t>("kv_kinds", "peak_full_attention_kv_bytes", "an integer");
  return s;
}

}  // namespace pagedgen
