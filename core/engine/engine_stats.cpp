#include "engine/engine_stats.h"

#include <algorithm>

#include "util/error.h"

namespace pagedgen {

void EngineStats::add_snapshot(const KvSnapshot& s) {
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
  int64_t kv_bytes = s.used_blocks * kv_bytes_per_block;
  if (!kinds.empty()) {
    PG_CHECK(s.kinds.size() == kinds.size(), "a snapshot of {} layer kinds, the stats have {}", s.kinds.size(),
             kinds.size());
    peak_full_attention_kv_bytes = std::max(peak_full_attention_kv_bytes, kv_bytes);
    kv_bytes = 0;
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      KvKindFigures& f = kinds[k];
      const KvKindSnapshot& ks = s.kinds[k];
      kv_bytes += ks.used_blocks * f.kv_bytes_per_block;
      f.peak_used_blocks = std::max(f.peak_used_blocks, ks.used_blocks);
      f.sum_used_blocks += ks.used_blocks;
      f.peak_filled_slots = std::max(f.peak_filled_slots, ks.filled_slots);
      f.peak_sequence_positions = std::max(f.peak_sequence_positions, ks.max_sequence_positions);
    }
  }
  peak_kv_bytes = std::max(peak_kv_bytes, kv_bytes);
}

int64_t EngineStats::pool_bytes() const {
  if (kinds.empty()) return num_pool_blocks * kv_bytes_per_block;
  int64_t bytes = 0;
  for (const KvKindFigures& k : kinds) bytes += k.pool_bytes();
  return bytes;
}

}  // namespace pagedgen
