// RunStats as the stats JSON (--stats) and the end-of-run summary write it: one section
// per function, in the file's order; the keys and layout are what dashboards read, so
// they never change.
#include "job/run_stats.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "util/byte_units.h"
#include "util/json_quote.h"
#include "util/ratio.h"

namespace pagedgen {

namespace {

std::string real(double v) { return fmt::format("{:.6g}", v); }

std::string device_memory_json(const JobStats& j) {
  return fmt::format("{{\"device\": {}, \"weight_bytes\": {}, \"kv_pool_bytes\": {}, \"activation_bytes\": {}}}",
                     json_quote(j.device), j.device_weight_bytes, j.device_kv_pool_bytes, j.device_activation_bytes);
}

std::string requests_json(const RunStats& s) {
  return fmt::format("{{\"lines\": {}, \"blank_lines\": {}, \"requests\": {}, \"failed\": {}, \"samples\": {}}}",
                     s.job.num_lines, s.job.num_blank_lines, s.job.num_requests, s.num_failed_requests(),
                     s.engine.num_samples);
}

std::string tokens_json(const EngineStats& e) {
  return fmt::format(
      "{{\"prompt\": {}, \"distinct_prompt\": {}, \"prompt_computed\": {}, \"prompt_cached\": {}, "
      "\"generated\": {}, \"prefix_groups\": {}}}",
      e.num_prompt_tokens, e.num_distinct_prompt_tokens, e.num_computed_prompt_tokens, e.prefix_hit_tokens,
      e.num_generated_tokens, e.num_prefix_groups);
}

std::string blocks_json(const EngineStats& e) {
  return fmt::format("{{\"steps\": {}, \"peak_used\": {}, \"used_sum\": {}, \"mean_used\": {}, "
                     "\"peak_shared\": {}, \"peak_kv_bytes\": {}}}",
                     e.num_steps, e.peak_used_blocks, e.sum_used_blocks, real(e.mean_used_blocks()),
                     e.peak_shared_blocks, e.peak_kv_bytes);
}

// Per layer kind, kind 0 (full attention) first: pool, blocks and bytes in use, and the most
// positions one sequence held there (a window kind: at most window + chunk + a block).
std::string kv_kinds_json(const EngineStats& e) {
  std::string out = "{\"kinds\": [";
  for (std::size_t i = 0; i < e.kinds.size(); ++i) {
    const KvKindFigures& k = e.kinds[i];
    out += fmt::format("{}{{\"kind\": {}, \"window\": {}, \"kv_bytes_per_block\": {}, \"pool_blocks\": {}, "
                       "\"pool_bytes\": {}, \"peak_used\": {}, \"used_sum\": {}, \"mean_used\": {}, "
                       "\"peak_kv_bytes\": {}, \"peak_filled_slots\": {}, \"peak_sequence_positions\": {}}}",
                       i ? ", " : "", i, k.window, k.kv_bytes_per_block, k.num_pool_blocks,
                       k.num_pool_blocks * k.kv_bytes_per_block, k.peak_used_blocks, k.sum_used_blocks,
                       real(ratio(k.sum_used_blocks, e.num_steps)), k.peak_used_blocks * k.kv_bytes_per_block,
                       k.peak_filled_slots, k.peak_sequence_positions);
  }
  out += fmt::format("], \"peak_kv_bytes\": {}, \"peak_full_attention_kv_bytes\": {}, "
                     "\"peak_kv_fraction_of_full_attention\": {}}}",
                     e.peak_kv_bytes, e.peak_full_attention_kv_bytes,
                     real(e.peak_kv_fraction_of_full_attention()));
  return out;
}

std::string slots_json(const EngineStats& e) {
  return fmt::format(
      "{{\"allocated_sum\": {}, \"filled_sum\": {}, \"logical_sum\": {}, \"sequence_allocated_sum\": {}, "
      "\"peak_allocated\": {}, \"peak_filled\": {}, \"utilization\": {}, \"internal_fragmentation\": {}, "
      "\"sequence_utilization\": {}, \"sharing_factor\": {}}}",
      e.sum_allocated_slots, e.sum_filled_slots, e.sum_logical_slots, e.sum_sequence_slots, e.peak_allocated_slots,
      e.peak_filled_slots, real(e.utilization()), real(e.internal_fragmentation()), real(e.sequence_utilization()),
      real(e.sharing_factor()));
}

std::string naive_reservation_json(const EngineStats& e) {
  return fmt::format(
      "{{\"max_model_len_slots_sum\": {}, \"request_slots_sum\": {}, \"peak_max_model_len_slots\": {}, "
      "\"peak_request_slots\": {}, \"peak_max_model_len_bytes\": {}, \"peak_request_bytes\": {}}}",
      e.sum_naive_max_len_slots, e.sum_naive_request_slots, e.peak_naive_max_len_slots, e.peak_naive_request_slots,
      e.peak_naive_max_len_slots * e.kv_bytes_per_slot(), e.peak_naive_request_slots * e.kv_bytes_per_slot());
}

std::string prefix_cache_json(const EngineStats& e) {
  return fmt::format(
      "{{\"lookup_blocks\": {}, \"hit_blocks\": {}, \"partial_hits\": {}, \"partial_hit_tokens\": {}, "
      "\"hit_tokens\": {}, \"key_collisions\": {}, \"evictions\": {}}}",
      e.prefix_lookup_blocks, e.prefix_hit_blocks, e.prefix_partial_hits, e.prefix_partial_tokens,
      e.prefix_hit_tokens, e.prefix_key_collisions, e.evictions);
}

std::string time_json(const RunStats& s) {
  return fmt::format("{{\"load\": {}, \"prepare\": {}, \"generate\": {}, \"prefill_steps\": {}, \"decode_steps\": {}}}",
                     real(s.job.load_seconds), real(s.job.prepare_seconds), real(s.engine.generate_seconds),
                     real(s.engine.prefill_seconds), real(s.engine.decode_seconds));
}

std::string throughput_json(const EngineStats& e) {
  const double seconds = e.generate_seconds;
  return fmt::format(
      "{{\"prompt_tokens_per_second\": {}, \"generated_tokens_per_second\": {}, \"total_tokens_per_second\": {}}}",
      real(ratio(static_cast<double>(e.num_computed_prompt_tokens), seconds)),
      real(e.generated_tokens_per_second()),
      real(ratio(static_cast<double>(e.num_computed_prompt_tokens + e.num_generated_tokens), seconds)));
}

std::string job_json(const JobStats& j) {
  return fmt::format("{{\"key\": {}, \"shard\": {}}}", json_quote(j.job_key), json_quote(j.shard));
}

std::string coverage_json(const RunStats& s) {
  return fmt::format(
      "{{\"complete\": {}, \"requests_this_run\": {}, \"requests_earlier\": {}, \"requests_unfinished\": {}, "
      "\"note\": {}}}",
      s.covers_whole_output() ? "true" : "false", s.job.num_requests, s.job.num_earlier_requests,
      s.job.num_unfinished_requests, json_quote(s.coverage_note()));
}

}  // namespace

std::string RunStats::coverage_note() const {
  const JobStats& j = job;
  if (covers_whole_output()) return fmt::format("the figures cover all {} requests of the output", j.num_requests);
  std::string note = fmt::format("the figures cover the {} requests this run answered", j.num_requests);
  if (j.num_earlier_requests > 0)
    note += fmt::format("; {} more lines of the output were answered by an earlier, interrupted run, whose figures "
                        "are not in them",
                        j.num_earlier_requests);
  if (j.num_unfinished_requests > 0)
    note += fmt::format("; the run stopped early, with {} requests read but not finished (a resumed run computes "
                        "them): the sample, generated-token, computed-token, step and block figures include the work "
                        "done on them so far",
                        j.num_unfinished_requests);
  return note;
}

std::string RunStats::to_json() const {
  const EngineStats& e = engine;
  std::vector<std::pair<const char*, std::string>> fields = {
      {"model", json_quote(job.model)},
      {"backend", json_quote(e.backend)},
      {"block_size", fmt::format("{}", e.block_size)},
      {"kv_bytes_per_block", fmt::format("{}", e.kv_bytes_per_block)},
      {"pool_blocks", fmt::format("{}", e.num_pool_blocks)},
      {"pool_bytes", fmt::format("{}", e.pool_bytes())},
      {"max_model_len", fmt::format("{}", e.max_model_len)},
      {"prefix_sharing", e.prefix_sharing ? "true" : "false"},
      {"device_memory", device_memory_json(job)},
      {"requests", requests_json(*this)},
      {"tokens", tokens_json(e)},
      {"blocks", blocks_json(e)},
      {"slots", slots_json(e)},
      {"naive_reservation", naive_reservation_json(e)},
      {"prefix_cache", prefix_cache_json(e)},
      {"copy_on_write", fmt::format("{{\"copies\": {}}}", e.cow_copies)},
      {"preemption", fmt::format("{{\"preemptions\": {}, \"recomputed_tokens\": {}}}", e.preemptions,
                                 e.recomputed_tokens)},
      {"time_seconds", time_json(*this)},
      {"throughput", throughput_json(e)},
      {"job", job_json(job)},
      {"coverage", coverage_json(*this)},
  };
  // Models with sliding-window layers only: the memory by layer kind.
  if (!e.kinds.empty()) fields.insert(fields.begin() + 12, {"kv_kinds", kv_kinds_json(e)});
  std::string out = "{\n";
  for (std::size_t i = 0; i < fields.size(); ++i)
    out += fmt::format("  \"{}\": {}{}\n", fields[i].first, fields[i].second, i + 1 < fields.size() ? "," : "");
  out += "}\n";
  return out;
}

std::string RunStats::summary() const {
  const EngineStats& e = engine;
  std::string s = covers_whole_output() ? "" : fmt::format("pagedgen: {}\n", coverage_note());
  s += fmt::format(
      "pagedgen: {} requests ({} failed, {} samples), {} prompt tokens ({} computed, {} from the prefix cache), {} "
      "generated in {:.2f} s ({:.1f} generated tokens/s)\n",
      job.num_requests, num_failed_requests(), e.num_samples, e.num_prompt_tokens, e.num_computed_prompt_tokens,
      e.prefix_hit_tokens, e.num_generated_tokens, e.generate_seconds, e.generated_tokens_per_second());
  s += fmt::format("pagedgen: KV blocks of {} tokens ({}): peak {} of {} in use ({}), mean {:.1f}; {:.2f}% of "
                   "allocated slots held a token ({:.2f}% of each sequence's slots); sharing factor {:.2f}\n",
                   e.block_size, format_bytes(static_cast<uint64_t>(e.kv_bytes_per_block)), e.peak_used_blocks,
                   e.num_pool_blocks, format_bytes(static_cast<uint64_t>(e.peak_kv_bytes)),
                   e.mean_used_blocks(), 100.0 * e.utilization(), 100.0 * e.sequence_utilization(),
                   e.sharing_factor());
  s += fmt::format("pagedgen: naive reservation would have peaked at {} (max_model_len per sequence) or {} "
                   "(prompt + max_tokens); {} copy-on-write copies, {} preemptions ({} tokens recomputed)\n",
                   format_bytes(static_cast<uint64_t>(e.peak_naive_max_len_slots * e.kv_bytes_per_slot())),
                   format_bytes(static_cast<uint64_t>(e.peak_naive_request_slots * e.kv_bytes_per_slot())), e.cow_copies,
                   e.preemptions, e.recomputed_tokens);
  for (std::size_t i = 0; i < e.kinds.size(); ++i)
    s += fmt::format("pagedgen: layer kind {} ({}): peak {} of {} blocks ({}), at most {} positions per sequence\n", i,
                     e.kinds[i].window == 0 ? std::string("full attention") : fmt::format("window {}", e.kinds[i].window),
                     e.kinds[i].peak_used_blocks, e.kinds[i].num_pool_blocks,
                     format_bytes(static_cast<uint64_t>(e.kinds[i].peak_used_blocks * e.kinds[i].kv_bytes_per_block)),
                     e.kinds[i].peak_sequence_positions);
  if (!e.kinds.empty())
    s += fmt::format("pagedgen: peak KV {} over all kinds, {:.1f}% of the {} the same steps would hold with every "
                     "layer keeping every position\n",
                     format_bytes(static_cast<uint64_t>(e.peak_kv_bytes)),
                     100.0 * e.peak_kv_fraction_of_full_attention(),
                     format_bytes(static_cast<uint64_t>(e.peak_full_attention_kv_bytes)));
  if (!job.device.empty())
    s += fmt::format("pagedgen: {} memory: weights {}, KV pool {}, activations {}\n", job.device,
                     format_bytes(static_cast<uint64_t>(job.device_weight_bytes)),
                     format_bytes(static_cast<uint64_t>(job.device_kv_pool_bytes)),
                     format_bytes(static_cast<uint64_t>(job.device_activation_bytes)));
  return s;
}

}  // namespace pagedgen
