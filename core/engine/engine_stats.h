// EngineStats: what the engine counts while it runs, per step and never estimated: the KV
// memory each step held, tokens planned, computed and generated, prefix-cache, copy and
// preemption counters, and step time. What only the job knows (lines, model, load time)
// is job/run_stats.h's, which writes both as one JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/ratio.h"

namespace pagedgen {

// One layer kind's share of a snapshot (models with sliding-window kinds only).
struct KvKindSnapshot {
  int64_t used_blocks = 0;             // the kind's blocks with a reference
  int64_t filled_slots = 0;            // ... slots of them holding a token
  int64_t max_sequence_positions = 0;  // the most positions one sequence holds in the kind
};

// What the KV cache held at the end of one engine step.
struct KvSnapshot {
  int64_t used_blocks = 0;          // blocks with a reference
  int64_t allocated_slots = 0;      // used_blocks * block_size
  int64_t filled_slots = 0;         // slots holding a token, each physical block once
  int64_t logical_slots = 0;        // sum over sequences of their tokens with a slot
  int64_t sequence_slots = 0;       // sum over sequences of their blocks * block_size (shared ones per sharer)
  int64_t shared_blocks = 0;        // blocks referenced by more than one sequence
  int64_t naive_max_len_slots = 0;  // sum over sequences holding KV of max_model_len
  int64_t naive_request_slots = 0;  // ... of prompt + max_tokens
  // The figures above are kind 0's (the full-attention layers, whose table spans each
  // sequence's whole context); a model with window kinds has every kind's here, kind 0 first.
  std::vector<KvKindSnapshot> kinds = {};
};

// One layer kind over the run (models with sliding-window kinds only).
struct KvKindFigures {
  int64_t window = 0;              // 0: kind 0, full attention
  int64_t kv_bytes_per_block = 0;  // over the kind's layers
  int64_t num_pool_blocks = 0;
  int64_t peak_used_blocks = 0;  // over the steps' snapshots
  int64_t sum_used_blocks = 0;
  int64_t peak_filled_slots = 0;
  int64_t peak_sequence_positions = 0;  // the most positions one sequence held in the kind at a step

  int64_t pool_bytes() const { return num_pool_blocks * kv_bytes_per_block; }
  int64_t peak_kv_bytes() const { return peak_used_blocks * kv_bytes_per_block; }
};

// One point of the KV timeline: the snapshot after engine step `step` (0-based).
struct KvTimelinePoint {
  int64_t step = 0;
  KvSnapshot kv;
};

struct EngineStats {
  static constexpr std::size_t kMaxTimelinePoints = 2048;

  // The engine's settings.
  std::string backend;
  int64_t block_size = 0;
  int64_t kv_bytes_per_block = 0;
  int64_t num_pool_blocks = 0;
  int64_t max_model_len = 0;
  bool prefix_sharing = true;

  // Requests and tokens.
  int64_t num_rejected_requests = 0;       // requests the engine ended with an error record (too
                                           // large for the pool, unusable logits)
  int64_t num_samples = 0;                 // sequences decoded (n per request)
  int64_t num_prompt_tokens = 0;           // over successful requests, once per request
  int64_t num_distinct_prompt_tokens = 0;  // token-trie nodes of the plans
  int64_t num_prefix_groups = 0;
  int64_t num_computed_prompt_tokens = 0;  // prompt positions whose K/V were computed (recompute included)
  int64_t num_generated_tokens = 0;

  // KV memory over the steps.
  int64_t num_steps = 0;
  int64_t used_blocks = 0;  // at the last step (for progress; not in the JSON)
  int64_t peak_used_blocks = 0;
  int64_t sum_used_blocks = 0;  // over steps: mean = sum / num_steps
  int64_t sum_allocated_slots = 0;
  int64_t sum_filled_slots = 0;
  int64_t sum_logical_slots = 0;
  int64_t sum_sequence_slots = 0;
  int64_t peak_allocated_slots = 0;
  int64_t peak_filled_slots = 0;
  int64_t peak_shared_blocks = 0;
  int64_t sum_naive_max_len_slots = 0;
  int64_t sum_naive_request_slots = 0;
  int64_t peak_naive_max_len_slots = 0;
  int64_t peak_naive_request_slots = 0;
  // KV bytes in use, the larger at any step: blocks of each kind times their bytes (one
  // kind: peak_used_blocks * kv_bytes_per_block).
  int64_t peak_kv_bytes = 0;
  // Layer kinds, kind 0 first; empty for a model of one kind. With kinds, the block and
  // slot figures above are kind 0's, and this is the same steps' kind 0 blocks times a
  // block's bytes over all layers: what they would hold if every layer kept every position.
  std::vector<KvKindFigures> kinds = {};
  int64_t peak_full_attention_kv_bytes = 0;
  // The snapshots of every timeline_stride-th step (0, stride, 2 * stride, ...); the stride
  // doubles whenever the timeline would pass kMaxTimelinePoints, dropping every other point.
  std::vector<KvTimelinePoint> timeline;
  int64_t timeline_stride = 1;

  // Prefix cache, copy-on-write, preemption.
  int64_t prefix_lookup_blocks = 0;
  int64_t prefix_hit_blocks = 0;
  int64_t prefix_hit_tokens = 0;      // prompt tokens whose prefill was skipped (full and partial hits)
  int64_t prefix_partial_hits = 0;    // blocks whose first tokens were copied at admission
  int64_t prefix_partial_tokens = 0;  // ... the tokens they carried
  int64_t prefix_key_collisions = 0;
  int64_t evictions = 0;
  int64_t cow_copies = 0;
  int64_t preemptions = 0;
  int64_t recomputed_tokens = 0;

  // Wall time, seconds.
  double generate_seconds = 0;  // planning and steps
  double prefill_seconds = 0;   // steps that computed at least one prompt position
  double decode_seconds = 0;    // steps that computed generated positions only

  void add_snapshot(const KvSnapshot& snapshot);

  // The derived figures, each defined here once (0 where its denominator is 0).
  double mean_used_blocks() const { return ratio(sum_used_blocks, num_steps); }
  // Slots holding a token / slots allocated, and its complement.
  double utilization() const { return ratio(sum_filled_slots, sum_allocated_slots); }
  double internal_fragmentation() const { return 1.0 - utilization(); }
  // Over each sequence's own slots (a shared block counted once per sharer).
  double sequence_utilization() const { return ratio(sum_logical_slots, sum_sequence_slots); }
  // Logical slots (per sharer) / physical slots holding a token.
  double sharing_factor() const { return ratio(sum_logical_slots, sum_filled_slots); }
  double peak_kv_fraction_of_full_attention() const { return ratio(peak_kv_bytes, peak_full_attention_kv_bytes); }
  double generated_tokens_per_second() const { return ratio(num_generated_tokens, generate_seconds); }
  // Prompt positions computed (recompute included) per second, and those with the generated tokens.
  double computed_prompt_tokens_per_second() const { return ratio(num_computed_prompt_tokens, generate_seconds); }
  double total_tokens_per_second() const {
    return ratio(num_computed_prompt_tokens + num_generated_tokens, generate_seconds);
  }
  int64_t kv_bytes_per_slot() const { return block_size > 0 ? kv_bytes_per_block / block_size : 0; }
  // What naive reservation would have held at its peak: per sequence max_model_len slots, or
  // prompt + max_tokens slots.
  int64_t peak_naive_max_len_bytes() const { return peak_naive_max_len_slots * kv_bytes_per_slot(); }
  int64_t peak_naive_request_bytes() const { return peak_naive_request_slots * kv_bytes_per_slot(); }
  // A layer kind's mean blocks in use over the steps.
  double mean_used_blocks(const KvKindFigures& kind) const { return ratio(kind.sum_used_blocks, num_steps); }
  // The pool's bytes over every kind.
  int64_t pool_bytes() const;
};

}  // namespace pagedgen
