#include "engine/run_stats.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/byte_units.h"
#include "util/json_quote.h"

namespace pagedgen {

namespace {

double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

}  // namespace

void RunStats::add_snapshot(const KvSnapshot& s) {
  const int64_t step = num_steps++;
  if (step % timeline_stride == 0) {
    timeline.push_back({step, s});
    if (timeline.size() > kMaxTimelinePoints) {
      timeline_stride *= 2;
      std::erase_if(timeline, [&](const KvTimelinePoint& p) { return p.step % timeline_stride != 0; });
    }
  }
  used_blocks = s.used_blocks;
  sum_used_blocks += s.used_blocks;
  sum_allocated_slots += s.allocated_slots;
  sum_filled_slots += s.filled_slots;
  sum_logical_slots += s.logical_slots;
  sum_sequence_slots += s.sequence_slots;
  sum_naive_max_len_slots += s.naive_max_len_slots;
  sum_naive_request_slots += s.naive_request_slots;
  peak_used_blocks = std::max(peak_used_blocks, s.used_blocks);
  peak_allocated_slots = std::max(peak_allocated_slots, s.allocated_slots);
  peak_filled_slots = std::max(peak_filled_slots, s.filled_slots);
  peak_shared_blocks = std::max(peak_shared_blocks, s.shared_blocks);
  peak_naive_max_len_slots = std::max(peak_naive_max_len_slots, s.naive_max_len_slots);
  peak_naive_request_slots = std::max(peak_naive_request_slots, s.naive_request_slots);
}

std::string RunStats::to_json() const {
  const double steps = static_cast<double>(num_steps);
  const int64_t peak_kv_bytes = peak_used_blocks * kv_bytes_per_block;
  const int64_t bytes_per_slot = block_size > 0 ? kv_bytes_per_block / block_size : 0;
  std::string out = "{\n";
  auto field = [&](std::string_view name, const std::string& value, bool last = false) {
    out += fmt::format("  \"{}\": {}{}\n", name, value, last ? "" : ",");
  };
  auto num = [](auto v) { return fmt::format("{}", v); };
  auto real = [](double v) { return fmt::format("{:.6g}", v); };
  field("model", json_quote(model));
  field("backend", json_quote(backend));
  field("block_size", num(block_size));
  field("kv_bytes_per_block", num(kv_bytes_per_block));
  field("pool_blocks", num(num_pool_blocks));
  field("pool_bytes", num(num_pool_blocks * kv_bytes_per_block));
  field("max_model_len", num(max_model_len));
  field("prefix_sharing", prefix_sharing ? "true" : "false");
  field("device_memory", fmt::format("{{\"device\": {}, \"weight_bytes\": {}, \"kv_pool_bytes\": {}, "
                                     "\"activation_bytes\": {}}}",
                                     json_quote(device), device_weight_bytes, device_kv_pool_bytes,
                                     device_activation_bytes));
  field("requests", fmt::format(
      "{{\"lines\": {}, \"blank_lines\": {}, \"requests\": {}, \"failed\": {}, \"samples\": {}}}", num_lines,
      num_blank_lines, num_requests, num_failed_requests, num_samples));
  field("tokens", fmt::format(
      "{{\"prompt\": {}, \"distinct_prompt\": {}, \"prompt_computed\": {}, \"prompt_cached\": {}, "
      "\"generated\": {}, \"prefix_groups\": {}}}",
      num_prompt_tokens, num_distinct_prompt_tokens, num_computed_prompt_tokens, prefix_hit_tokens,
      num_generated_tokens, num_prefix_groups));
  field("blocks", fmt::format("{{\"steps\": {}, \"peak_used\": {}, \"used_sum\": {}, \"mean_used\": {}, "
                              "\"peak_shared\": {}, \"peak_kv_bytes\": {}}}",
                              num_steps, peak_used_blocks, sum_used_blocks,
                              real(ratio(static_cast<double>(sum_used_blocks), steps)),
                              peak_shared_blocks, peak_kv_bytes));
  field("slots", fmt::format(
      "{{\"allocated_sum\": {}, \"filled_sum\": {}, \"logical_sum\": {}, \"sequence_allocated_sum\": {}, "
      "\"peak_allocated\": {}, \"peak_filled\": {}, \"utilization\": {}, \"internal_fragmentation\": {}, "
      "\"sequence_utilization\": {}, \"sharing_factor\": {}}}",
      sum_allocated_slots, sum_filled_slots, sum_logical_slots, sum_sequence_slots, peak_allocated_slots,
      peak_filled_slots,
      real(ratio(static_cast<double>(sum_filled_slots), static_cast<double>(sum_allocated_slots))),
      real(1.0 - ratio(static_cast<double>(sum_filled_slots), static_cast<double>(sum_allocated_slots))),
      real(ratio(static_cast<double>(sum_logical_slots), static_cast<double>(sum_sequence_slots))),
      real(ratio(static_cast<double>(sum_logical_slots), static_cast<double>(sum_filled_slots)))));
  field("naive_reservation", fmt::format(
      "{{\"max_model_len_slots_sum\": {}, \"request_slots_sum\": {}, \"peak_max_model_len_slots\": {}, "
      "\"peak_request_slots\": {}, \"peak_max_model_len_bytes\": {}, \"peak_request_bytes\": {}}}",
      sum_naive_max_len_slots, sum_naive_request_slots, peak_naive_max_len_slots, peak_naive_request_slots,
      peak_naive_max_len_slots * bytes_per_slot, peak_naive_request_slots * bytes_per_slot));
  field("prefix_cache", fmt::format(
      "{{\"lookup_blocks\": {}, \"hit_blocks\": {}, \"partial_hits\": {}, \"partial_hit_tokens\": {}, "
      "\"hit_tokens\": {}, \"key_collisions\": {}, \"evictions\": {}}}",
      prefix_lookup_blocks, prefix_hit_blocks, prefix_partial_hits, prefix_partial_tokens, prefix_hit_tokens,
      prefix_key_collisions, evictions));
  field("copy_on_write", fmt::format("{{\"copies\": {}}}", cow_copies));
  field("preemption", fmt::format("{{\"preemptions\": {}, \"recomputed_tokens\": {}}}", preemptions, recomputed_tokens));
  field("time_seconds", fmt::format("{{\"load\": {}, \"prepare\": {}, \"generate\": {}, \"prefill_steps\": {}, "
                                    "\"decode_steps\": {}}}",
                                    real(load_seconds), real(prepare_seconds), real(generate_seconds),
                                    real(prefill_seconds), real(decode_seconds)));
  field("throughput", fmt::format(
      "{{\"prompt_tokens_per_second\": {}, \"generated_tokens_per_second\": {}, \"total_tokens_per_second\": {}}}",
      real(ratio(static_cast<double>(num_computed_prompt_tokens), generate_seconds)),
      real(ratio(static_cast<double>(num_generated_tokens), generate_seconds)),
      real(ratio(static_cast<double>(num_computed_prompt_tokens + num_generated_tokens), generate_seconds))),
      true);
  out += "}\n";
  return out;
}

std::string RunStats::summary() const {
  const double util = ratio(static_cast<double>(sum_filled_slots), static_cast<double>(sum_allocated_slots));
  const double sharing = ratio(static_cast<double>(sum_logical_slots), static_cast<double>(sum_filled_slots));
  std::string s;
  s += fmt::format("pagedgen: {} requests ({} failed, {} samples), {} prompt tokens ({} computed, {} from the "
                   "prefix cache), {} generated in {:.2f} s ({:.1f} generated tokens/s)\n",
                   num_requests, num_failed_requests, num_samples, num_prompt_tokens, num_computed_prompt_tokens,
                   prefix_hit_tokens, num_generated_tokens, generate_seconds,
                   ratio(static_cast<double>(num_generated_tokens), generate_seconds));
  const double seq_util = ratio(static_cast<double>(sum_logical_slots), static_cast<double>(sum_sequence_slots));
  s += fmt::format("pagedgen: KV blocks of {} tokens ({}): peak {} of {} in use ({}), mean {:.1f}; {:.2f}% of "
                   "allocated slots held a token ({:.2f}% of each sequence's slots); sharing factor {:.2f}\n",
                   block_size, format_bytes(static_cast<uint64_t>(kv_bytes_per_block)), peak_used_blocks,
                   num_pool_blocks, format_bytes(static_cast<uint64_t>(peak_used_blocks * kv_bytes_per_block)),
                   ratio(static_cast<double>(sum_used_blocks), static_cast<double>(num_steps)), 100.0 * util,
                   100.0 * seq_util, sharing);
  const int64_t bytes_per_slot = block_size > 0 ? kv_bytes_per_block / block_size : 0;
  s += fmt::format("pagedgen: naive reservation would have peaked at {} (max_model_len per sequence) or {} "
                   "(prompt + max_tokens); {} copy-on-write copies, {} preemptions ({} tokens recomputed)\n",
                   format_bytes(static_cast<uint64_t>(peak_naive_max_len_slots * bytes_per_slot)),
                   format_bytes(static_cast<uint64_t>(peak_naive_request_slots * bytes_per_slot)), cow_copies,
                   preemptions, recomputed_tokens);
  if (!device.empty())
    s += fmt::format("pagedgen: {} memory: weights {}, KV pool {}, activations {}\n", device,
                     format_bytes(static_cast<uint64_t>(device_weight_bytes)),
                     format_bytes(static_cast<uint64_t>(device_kv_pool_bytes)),
                     format_bytes(static_cast<uint64_t>(device_activation_bytes)));
  return s;
}

}  // namespace pagedgen
