// LineWindows: how a run cuts its input into planning windows and which of them it owns.
// Window w holds input lines [w * W, (w + 1) * W) (blank lines count, W = --plan-window);
// the engine plans and decodes one window at a time, so host memory stays bounded, and
// shard K of N (--shard K/N) owns the windows with w % N == K:
//
//   lines    0 .. W-1 | W .. 2W-1 | 2W .. 3W-1 | 3W .. 4W-1 | ...
//   window       0    |     1     |      2     |      3     | ...
//   shard (N=2)  0    |     1     |      0     |      1     | ...
//
// A window's lines are the same in a single run, in a shard and in a resumed run, so its
// plan, its prefix-cache hits and therefore its output bytes are too.
#pragma once

#include <cstdint>

namespace pagedgen {

struct LineWindows {
  uint64_t window_lines = 10000;  // W
  uint64_t shard = 0;             // K
  uint64_t num_shards = 1;        // N
  uint64_t first_window = 0;      // windows before it are skipped (--resume)

  uint64_t window_of(uint64_t line) const { return line / window_lines; }
  bool owns(uint64_t line) const {
    const uint64_t window = window_of(line);
    return window % num_shards == shard && window >= first_window;
  }
};

}  // namespace pagedgen
