// LineWindows: how a run cuts its input into planning windows and which lines it owns.
// Window w holds input lines [w * W, (w + 1) * W) (blank lines count, W = --plan-window);
// the engine plans and decodes one window at a time, so host memory stays bounded.
//
// Shard K of N (--shard K/N) owns the windows with w % N == K when the input has at least
// N windows: each window is then planned whole, as in a single run, so its prefix-cache
// hits and therefore its output bytes are a single run's:
//
//   lines    0 .. W-1 | W .. 2W-1 | 2W .. 3W-1 | 3W .. 4W-1 | ...
//   window       0    |     1     |      2     |      3     | ...
//   shard (N=2)  0    |     1     |      0     |      1     | ...
//
// An input of fewer windows than shards (its L lines known, a file) is split by lines, so
// that every shard gets work: shard K owns lines [K*L/N, (K+1)*L/N), fewer than W, and
// plans them as one batch. Texts stay a single run's; `cached_tokens` can differ, since
// prefixes are shared only within a shard:
//
//   L = 10 lines, W = 10000, N = 4:   shard 0: 0 1 | shard 1: 2 3 4 | shard 2: 5 6 | shard 3: 7 8 9
//
// A stream's length is unknown: its shards always split windows.
#pragma once

#include <cstdint>
#include <optional>

namespace pagedgen {

struct LineWindows {
  uint64_t window_lines = 10000;            // W
  uint64_t shard = 0;                       // K
  uint64_t num_shards = 1;                  // N
  std::optional<uint64_t> num_input_lines;  // L, blank lines included; nullopt for a stream

  // True when the shards split lines rather than windows (see above).
  bool splits_lines() const {
    return num_shards > 1 && num_input_lines && (*num_input_lines + window_lines - 1) / window_lines < num_shards;
  }
  // The first line of shard k when lines are split, floor(L * k / N) (k = N gives L),
  // without overflowing L * k.
  uint64_t first_line_of_shard(uint64_t k) const {
    const uint64_t lines = *num_input_lines;
    return lines / num_shards * k + lines % num_shards * k / num_shards;
  }
  // The batch a line is planned in: its window, or (lines split) the shard's one batch.
  uint64_t window_of(uint64_t line) const { return splits_lines() ? 0 : line / window_lines; }
  bool owns(uint64_t line) const {
    if (splits_lines()) return line >= first_line_of_shard(shard) && line < first_line_of_shard(shard + 1);
    return (line / window_lines) % num_shards == shard;
  }
};

}  // namespace pagedgen
