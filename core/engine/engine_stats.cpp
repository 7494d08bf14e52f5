#include "engine/engine_stats.h"

#include <algorithm>

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
}

}  // namespace pagedgen
