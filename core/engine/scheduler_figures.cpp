#include "engine/scheduler_figures.h"

#include <algorithm>

namespace pagedgen {

KvSnapshot take_kv_snapshot(const Scheduler& scheduler, int64_t max_model_len) {
  const KvCacheManager& kv = scheduler.kv();
  const KvCacheStats stats = kv.stats();
  KvSnapshot snap;
  snap.used_blocks = stats.num_used_blocks;
  snap.allocated_slots = stats.num_allocated_slots;
  snap.filled_slots = stats.num_filled_slots;
  snap.logical_slots = stats.num_logical_slots;
  snap.shared_blocks = kv.pool().num_shared_blocks();
  for (uint64_t id : kv.sequence_ids()) {
    snap.sequence_slots += static_cast<int64_t>(kv.block_table(id).size()) * kv.block_size();
    const Sequence& seq = scheduler.sequence(id);
    snap.naive_max_len_slots += max_model_len;
    snap.naive_request_slots += std::min<int64_t>(max_model_len, int64_t{seq.num_prompt_tokens} + seq.max_tokens);
  }
  if (kv.num_kinds() > 1) {
    for (KvKindId kind = 0; kind < kv.num_kinds(); ++kind) {
      const KvKindStats& k = stats.kinds[static_cast<std::size_t>(kind)];
      KvKindSnapshot ks{.used_blocks = k.num_used_blocks, .filled_slots = k.num_filled_slots};
      // A sequence holds its positions from the first block it did not give back.
      for (uint64_t id : kv.sequence_ids())
        ks.max_sequence_positions = std::max<int64_t>(
            ks.max_sequence_positions, kv.num_slots(id) - int64_t{kv.num_released_blocks(id, kind)} * kv.block_size());
      snap.kinds.push_back(ks);
    }
  }
  return snap;
}

void add_scheduler_counters(const Scheduler& scheduler, EngineStats& stats) {
  const KvCacheStats kv = scheduler.kv().stats();
  const SchedulerCounters& counters = scheduler.counters();
  stats.num_computed_prompt_tokens += counters.num_computed_prompt_tokens;
  stats.prefix_lookup_blocks += kv.num_lookup_blocks;
  stats.prefix_hit_blocks += kv.num_hit_blocks;
  stats.prefix_hit_tokens += kv.num_hit_tokens;
  stats.prefix_partial_hits += kv.num_partial_hits;
  stats.prefix_partial_tokens += kv.num_partial_tokens;
  stats.prefix_key_collisions += kv.num_key_collisions;
  stats.cow_copies += kv.num_cow_copies;
  stats.evictions += kv.num_evictions;
  stats.preemptions += counters.num_preemptions;
  stats.recomputed_tokens += counters.num_recomputed_tokens;
}

}  // namespace pagedgen
