// RunStats read back from its JSON and added up over runs: what `pagedgen merge` does with
// the stats files of shards.
#include <simdjson.h>

#include <algorithm>

#include "engine/run_stats.h"
#include "util/error.h"

namespace pagedgen {

void RunStats::add_run(const RunStats& o) {
  if (model != o.model || backend != o.backend || block_size != o.block_size || num_pool_blocks != o.num_pool_blocks)
    fail("the stats are of different runs (model {} vs {}, backend {} vs {}, block size {} vs {}, pool {} vs {} "
         "blocks); merge only shards of one job",
         model, o.model, backend, o.backend, block_size, o.block_size, num_pool_blocks, o.num_pool_blocks);
  for (auto [sum, add] : {std::pair{&num_lines, o.num_lines}, {&num_blank_lines, o.num_blank_lines},
                          {&num_requests, o.num_requests}, {&num_failed_requests, o.num_failed_requests},
                          {&num_samples, o.num_samples}, {&num_prompt_tokens, o.num_prompt_tokens},
                          {&num_distinct_prompt_tokens, o.num_distinct_prompt_tokens},
                          {&num_prefix_groups, o.num_prefix_groups},
                          {&num_computed_prompt_tokens, o.num_computed_prompt_tokens},
                          {&num_generated_tokens, o.num_generated_tokens}, {&num_steps, o.num_steps},
                          {&sum_used_blocks, o.sum_used_blocks}, {&sum_allocated_slots, o.sum_allocated_slots},
                          {&sum_filled_slots, o.sum_filled_slots}, {&sum_logical_slots, o.sum_logical_slots},
                          {&sum_sequence_slots, o.sum_sequence_slots},
                          {&sum_naive_max_len_slots, o.sum_naive_max_len_slots},
                          {&sum_naive_request_slots, o.sum_naive_request_slots},
                          {&prefix_lookup_blocks, o.prefix_lookup_blocks}, {&prefix_hit_blocks, o.prefix_hit_blocks},
                          {&prefix_hit_tokens, o.prefix_hit_tokens}, {&prefix_partial_hits, o.prefix_partial_hits},
                          {&prefix_partial_tokens, o.prefix_partial_tokens},
                          {&prefix_key_collisions, o.prefix_key_collisions}, {&evictions, o.evictions},
                          {&cow_copies, o.cow_copies}, {&preemptions, o.preemptions},
                          {&recomputed_tokens, o.recomputed_tokens}})
    *sum += add;
  for (auto [peak, other] : {std::pair{&peak_used_blocks, o.peak_used_blocks},
                             {&peak_allocated_slots, o.peak_allocated_slots},
                             {&peak_filled_slots, o.peak_filled_slots}, {&peak_shared_blocks, o.peak_shared_blocks},
                             {&peak_naive_max_len_slots, o.peak_naive_max_len_slots},
                             {&peak_naive_request_slots, o.peak_naive_request_slots}})
    *peak = std::max(*peak, other);
  for (auto [sum, add] : {std::pair{&load_seconds, o.load_seconds}, {&prepare_seconds, o.prepare_seconds},
                          {&generate_seconds, o.generate_seconds}, {&prefill_seconds, o.prefill_seconds},
                          {&decode_seconds, o.decode_seconds}})
    *sum += add;
}

RunStats RunStats::from_json(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json.data(), json.size()).get(root) != simdjson::SUCCESS) fail("the stats are not valid JSON");
  auto element = [&](const char* object, const char* key) {
    simdjson::dom::element value;
    if ((object ? root[object][key] : root[key]).get(value) != simdjson::SUCCESS)
      fail("the stats have no {}{}{}", object ? object : "", object ? "." : "", key);
    return value;
  };
  auto integer = [&](const char* object, const char* key) {
    int64_t value = 0;
    if (element(object, key).get(value) != simdjson::SUCCESS)
      fail("stats field {}.{} is not an integer", object ? object : "", key);
    return value;
  };
  auto real = [&](const char* object, const char* key) {
    double value = 0;
    if (element(object, key).get(value) != simdjson::SUCCESS)
      fail("stats field {}.{} is not a number", object ? object : "", key);
    return value;
  };
  RunStats s;
  std::string_view text;
  if (element(nullptr, "model").get(text) != simdjson::SUCCESS) fail("stats field model is not a string");
  s.model = std::string(text);
  if (element(nullptr, "backend").get(text) != simdjson::SUCCESS) fail("stats field backend is not a string");
  s.backend = std::string(text);
  if (element(nullptr, "prefix_sharing").get(s.prefix_sharing) != simdjson::SUCCESS)
    fail("stats field prefix_sharing is not a boolean");
  s.block_size = integer(nullptr, "block_size");
  s.kv_bytes_per_block = integer(nullptr, "kv_bytes_per_block");
  s.num_pool_blocks = integer(nullptr, "pool_blocks");
  s.max_model_len = integer(nullptr, "max_model_len");
  s.num_lines = integer("requests", "lines");
  s.num_blank_lines = integer("requests", "blank_lines");
  s.num_requests = integer("requests", "requests");
  s.num_failed_requests = integer("requests", "failed");
  s.num_samples = integer("requests", "samples");
  s.num_prompt_tokens = integer("tokens", "prompt");
  s.num_distinct_prompt_tokens = integer("tokens", "distinct_prompt");
  s.num_computed_prompt_tokens = integer("tokens", "prompt_computed");
  s.num_generated_tokens = integer("tokens", "generated");
  s.num_prefix_groups = integer("tokens", "prefix_groups");
  s.num_steps = integer("blocks", "steps");
  s.peak_used_blocks = integer("blocks", "peak_used");
  s.sum_used_blocks = integer("blocks", "used_sum");
  s.peak_shared_blocks = integer("blocks", "peak_shared");
  s.sum_allocated_slots = integer("slots", "allocated_sum");
  s.sum_filled_slots = integer("slots", "filled_sum");
  s.sum_logical_slots = integer("slots", "logical_sum");
  s.sum_sequence_slots = integer("slots", "sequence_allocated_sum");
  s.peak_allocated_slots = integer("slots", "peak_allocated");
  s.peak_filled_slots = integer("slots", "peak_filled");
  s.sum_naive_max_len_slots = integer("naive_reservation", "max_model_len_slots_sum");
  s.sum_naive_request_slots = integer("naive_reservation", "request_slots_sum");
  s.peak_naive_max_len_slots = integer("naive_reservation", "peak_max_model_len_slots");
  s.peak_naive_request_slots = integer("naive_reservation", "peak_request_slots");
  s.prefix_lookup_blocks = integer("prefix_cache", "lookup_blocks");
  s.prefix_hit_blocks = integer("prefix_cache", "hit_blocks");
  s.prefix_hit_tokens = integer("prefix_cache", "hit_tokens");
  s.prefix_partial_hits = integer("prefix_cache", "partial_hits");
  s.prefix_partial_tokens = integer("prefix_cache", "partial_hit_tokens");
  s.prefix_key_collisions = integer("prefix_cache", "key_collisions");
  s.evictions = integer("prefix_cache", "evictions");
  s.cow_copies = integer("copy_on_write", "copies");
  s.preemptions = integer("preemption", "preemptions");
  s.recomputed_tokens = integer("preemption", "recomputed_tokens");
  s.load_seconds = real("time_seconds", "load");
  s.prepare_seconds = real("time_seconds", "prepare");
  s.generate_seconds = real("time_seconds", "generate");
  s.prefill_seconds = real("time_seconds", "prefill_steps");
  s.decode_seconds = real("time_seconds", "decode_steps");
  return s;
}

}  // namespace pagedgen
