// Progress of `generate`, always on stderr (stdout may carry the output). On a terminal one
// bar, redrawn in place at most every 0.2 s:
//   [#########...............] 120/1000 requests  35.2 tok/s  ETA 0:04:10  KV 130/4096 blocks
// otherwise the same figures as a plain log line every interval; nothing when quiet. The
// total is unknown when the input is a stream: then no bar and no ETA, only counts.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace pagedgen::app {

class ProgressReporter {
 public:
  enum class Mode { kQuiet, kBar, kLog };

  // kQuiet when `quiet`, else kBar when stderr is a terminal, else kLog.
  static Mode mode_for_stderr(bool quiet);

  ProgressReporter(Mode mode, double log_interval_seconds, std::optional<uint64_t> num_total_requests,
                   int64_t num_pool_blocks);

  // Called after each engine step and each finished request; prints when it is time.
  void update(uint64_t num_done_requests, int64_t num_generated_tokens, int64_t num_used_blocks);
  // Prints the last figures (the bar's line is ended).
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  std::string figures() const;
  void print();

  Mode mode_;
  std::chrono::duration<double> interval_;
  std::optional<uint64_t> num_total_;
  int64_t num_pool_blocks_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_print_ = Clock::now();
  uint64_t num_done_ = 0;
  int64_t num_generated_tokens_ = 0;
  int64_t num_used_blocks_ = 0;
  bool printed_bar_ = false;
};

}  // namespace pagedgen::app
