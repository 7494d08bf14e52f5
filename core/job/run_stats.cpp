// RunStats as the stats JSON (--stats) and the end-of-run summary write it: one section
// per function, in the file's order; the keys and layout are what dashboards read, so
// they never change.
#include "job/run_stats.h"

#include <fmt/format.h>

#include "util/byte_units.h"
#include "util/json_writer.h"

namespace pagedgen {

namespace {

JsonObject device_memory_json(const JobStats& j) {
  return JsonObject()
      .add_string("device", j.device)
      .add_int("weight_bytes", j.device_weight_bytes)
      .add_int("kv_pool_bytes", j.device_kv_pool_bytes)
      .add_int("activation_bytes", j.device_activation_bytes);
}

JsonObject requests_json(const RunStats& s) {
  return JsonObject()
      .add_int("lines", s.job.num_lines)
      .add_int("blank_lines", s.job.num_blank_lines)
      .add_int("requests", s.job.num_requests)
      .add_int("failed", s.num_failed_requests())
      .add_int("samples", s.engine.num_samples);
}

JsonObject tokens_json(const EngineStats& e) {
  return JsonObject()
      .add_int("prompt", e.num_prompt_tokens)
      .add_int("distinct_prompt", e.num_distinct_prompt_tokens)
      .add_int("prompt_computed", e.num_computed_prompt_tokens)
      .add_int("prompt_cached", e.prefix_hit_tokens)
      .add_int("generated", e.num_generated_tokens)
      .add_int("prefix_groups", e.num_prefix_groups);
}

JsonObject blocks_json(const EngineStats& e) {
  return JsonObject()
      .add_int("steps", e.num_steps)
      .add_int("peak_used", e.peak_used_blocks)
      .add_int("used_sum", e.sum_used_blocks)
      .add_real("mean_used", e.mean_used_blocks())
      .add_int("peak_shared", e.peak_shared_blocks)
      .add_int("peak_kv_bytes", e.peak_kv_bytes);
}

// Per layer kind, kind 0 (full attention) first: pool, blocks and bytes in use, and the most
// positions one sequence held there (a window kind: at most window + chunk + a block).
JsonObject kv_kinds_json(const EngineStats& e) {
  JsonArray kinds;
  for (std::size_t i = 0; i < e.kinds.size(); ++i) {
    const KvKindFigures& k = e.kinds[i];
    kinds.add_object(JsonObject()
                         .add_int("kind", static_cast<int64_t>(i))
                         .add_int("window", k.window)
                         .add_int("kv_bytes_per_block", k.kv_bytes_per_block)
                         .add_int("pool_blocks", k.num_pool_blocks)
                         .add_int("pool_bytes", k.pool_bytes())
                         .add_int("peak_used", k.peak_used_blocks)
                         .add_int("used_sum", k.sum_used_blocks)
                         .add_real("mean_used", e.mean_used_blocks(k))
                         .add_int("peak_kv_bytes", k.peak_kv_bytes())
                         .add_int("peak_filled_slots", k.peak_filled_slots)
                         .add_int("peak_sequence_positions", k.peak_sequence_positions));
  }
  return JsonObject()
      .add_array("kinds", kinds)
      .add_int("peak_kv_bytes", e.peak_kv_bytes)
      .add_int("peak_full_attention_kv_bytes", e.peak_full_attention_kv_bytes)
      .add_real("peak_kv_fraction_of_full_attention", e.peak_kv_fraction_of_full_attention());
}

JsonObject slots_json(const EngineStats& e) {
  return JsonObject()
      .add_int("allocated_sum", e.sum_allocated_slots)
      .add_int("filled_sum", e.sum_filled_slots)
      .add_int("logical_sum", e.sum_logical_slots)
      .add_int("sequence_allocated_sum", e.sum_sequence_slots)
      .add_int("peak_allocated", e.peak_allocated_slots)
      .add_int("peak_filled", e.peak_filled_slots)
      .add_real("utilization", e.utilization())
      .add_real("internal_fragmentation", e.internal_fragmentation())
      .add_real("sequence_utilization", e.sequence_utilization())
      .add_real("sharing_factor", e.sharing_factor());
}

JsonObject naive_reservation_json(const EngineStats& e) {
  return JsonObject()
      .add_int("max_model_len_slots_sum", e.sum_naive_max_len_slots)
      .add_int("request_slots_sum", e.sum_naive_request_slots)
      .add_int("peak_max_model_len_slots", e.peak_naive_max_len_slots)
      .add_int("peak_request_slots", e.peak_naive_request_slots)
      .add_int("peak_max_model_len_bytes", e.peak_naive_max_len_bytes())
      .add_int("peak_request_bytes", e.peak_naive_request_bytes());
}

JsonObject prefix_cache_json(const EngineStats& e) {
  return JsonObject()
      .add_int("lookup_blocks", e.prefix_lookup_blocks)
      .add_int("hit_blocks", e.prefix_hit_blocks)
      .add_int("partial_hits", e.prefix_partial_hits)
      .add_int("partial_hit_tokens", e.prefix_partial_tokens)
      .add_int("hit_tokens", e.prefix_hit_tokens)
      .add_int("key_collisions", e.prefix_key_collisions)
      .add_int("evictions", e.evictions);
}

JsonObject time_json(const RunStats& s) {
  return JsonObject()
      .add_real("load", s.job.load_seconds)
      .add_real("prepare", s.job.prepare_seconds)
      .add_real("generate", s.engine.generate_seconds)
      .add_real("prefill_steps", s.engine.prefill_seconds)
      .add_real("decode_steps", s.engine.decode_seconds);
}

JsonObject throughput_json(const EngineStats& e) {
  return JsonObject()
      .add_real("prompt_tokens_per_second", e.computed_prompt_tokens_per_second())
      .add_real("generated_tokens_per_second", e.generated_tokens_per_second())
      .add_real("total_tokens_per_second", e.total_tokens_per_second());
}

JsonObject coverage_json(const RunStats& s) {
  return JsonObject()
      .add_bool("complete", s.covers_whole_output())
      .add_int("requests_this_run", s.job.num_requests)
      .add_int("requests_earlier", s.job.num_earlier_requests)
      .add_int("requests_unfinished", s.job.num_unfinished_requests)
      .add_string("note", s.coverage_note());
}

}  // namespace

std::string RunStats::coverage_note() const {
  const JobStats& j = job;
  if (covers_whole_output()) return fmt::format("the figures cover all {} requests of the output", j.num_requests);
  std::string note = fmt::format("the figures cover the {} requests this run answered", j.num_requests);
  if (j.num_earlier_requests > 0)
    note += fmt::format(
        "; {} more lines of the output were answered by an earlier, interrupted run, whose figures "
        "are not in them",
        j.num_earlier_requests);
  if (j.num_unfinished_requests > 0)
    note += fmt::format(
        "; the run stopped early, with {} requests read but not finished (a resumed run computes "
        "them): the sample, generated-token, computed-token, step and block figures include the work "
        "done on them so far",
        j.num_unfinished_requests);
  return note;
}

JsonObject RunStats::to_json_object() const {
  const EngineStats& e = engine;
  JsonObject out;
  out.add_string("model", job.model)
      .add_string("backend", e.backend)
      .add_int("block_size", e.block_size)
      .add_int("kv_bytes_per_block", e.kv_bytes_per_block)
      .add_int("pool_blocks", e.num_pool_blocks)
      .add_int("pool_bytes", e.pool_bytes())
      .add_int("max_model_len", e.max_model_len)
      .add_bool("prefix_sharing", e.prefix_sharing)
      .add_object("device_memory", device_memory_json(job))
      .add_object("requests", requests_json(*this))
      .add_object("tokens", tokens_json(e))
      .add_object("blocks", blocks_json(e));
  // Models with sliding-window layers only: the memory by layer kind.
  if (!e.kinds.empty()) out.add_object("kv_kinds", kv_kinds_json(e));
  out.add_object("slots", slots_json(e))
      .add_object("naive_reservation", naive_reservation_json(e))
      .add_object("prefix_cache", prefix_cache_json(e))
      .add_object("copy_on_write", JsonObject().add_int("copies", e.cow_copies))
      .add_object("preemption",
                  JsonObject().add_int("preemptions", e.preemptions).add_int("recomputed_tokens", e.recomputed_tokens))
      .add_object("time_seconds", time_json(*this))
      .add_object("throughput", throughput_json(e))
      .add_object("job", JsonObject().add_string("key", job.job_key).add_string("shard", job.shard))
      .add_object("coverage", coverage_json(*this));
  return out;
}

std::string RunStats::to_json() const { return to_json_object().lines_text(); }

std::string RunStats::summary() const {
  const EngineStats& e = engine;
  std::string s = covers_whole_output() ? "" : fmt::format("pagedgen: {}\n", coverage_note());
  s += fmt::format(
      "pagedgen: {} requests ({} failed, {} samples), {} prompt tokens ({} computed, {} from the prefix cache), {} "
      "generated in {:.2f} s ({:.1f} generated tokens/s)\n",
      job.num_requests, num_failed_requests(), e.num_samples, e.num_prompt_tokens, e.num_computed_prompt_tokens,
      e.prefix_hit_tokens, e.num_generated_tokens, e.generate_seconds, e.generated_tokens_per_second());
  s += fmt::format(
      "pagedgen: KV blocks of {} tokens ({}): peak {} of {} in use ({}), mean {:.1f}; {:.2f}% of "
      "allocated slots held a token ({:.2f}% of each sequence's slots); sharing factor {:.2f}\n",
      e.block_size, format_bytes(static_cast<uint64_t>(e.kv_bytes_per_block)), e.peak_used_blocks, e.num_pool_blocks,
      format_bytes(static_cast<uint64_t>(e.peak_kv_bytes)), e.mean_used_blocks(), 100.0 * e.utilization(),
      100.0 * e.sequence_utilization(), e.sharing_factor());
  s += fmt::format(
      "pagedgen: naive reservation would have peaked at {} (max_model_len per sequence) or {} "
      "(prompt + max_tokens); {} copy-on-write copies, {} preemptions ({} tokens recomputed)\n",
      format_bytes(static_cast<uint64_t>(e.peak_naive_max_len_bytes())),
      format_bytes(static_cast<uint64_t>(e.peak_naive_request_bytes())), e.cow_copies, e.preemptions,
      e.recomputed_tokens);
  for (std::size_t i = 0; i < e.kinds.size(); ++i)
    s += fmt::format(
        "pagedgen: layer kind {} ({}): peak {} of {} blocks ({}), at most {} positions per sequence\n", i,
        e.kinds[i].window == 0 ? std::string("full attention") : fmt::format("window {}", e.kinds[i].window),
        e.kinds[i].peak_used_blocks, e.kinds[i].num_pool_blocks,
        format_bytes(static_cast<uint64_t>(e.kinds[i].peak_kv_bytes())), e.kinds[i].peak_sequence_positions);
  if (!e.kinds.empty())
    s += fmt::format(
        "pagedgen: peak KV {} over all kinds, {:.1f}% of the {} the same steps would hold with every "
        "layer keeping every position\n",
        format_bytes(static_cast<uint64_t>(e.peak_kv_bytes)), 100.0 * e.peak_kv_fraction_of_full_attention(),
        format_bytes(static_cast<uint64_t>(e.peak_full_attention_kv_bytes)));
  if (!job.device.empty())
    s += fmt::format("pagedgen: {} memory: weights {}, KV pool {}, activations {}\n", job.device,
                     format_bytes(static_cast<uint64_t>(job.device_weight_bytes)),
                     format_bytes(static_cast<uint64_t>(job.device_kv_pool_bytes)),
                     format_bytes(static_cast<uint64_t>(job.device_activation_bytes)));
  return s;
}

}  // namespace pagedgen
