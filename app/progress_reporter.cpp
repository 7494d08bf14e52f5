#include "progress_reporter.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace pagedgen::app {

namespace {

constexpr double kBarRedrawSeconds = 0.2;
constexpr int kBarWidth = 24;

std::string format_duration(double seconds) {
  const auto total = static_cast<int64_t>(seconds + 0.5);
  return fmt::format("{}:{:02}:{:02}", total / 3600, total / 60 % 60, total % 60);
}

}  // namespace

ProgressReporter::Mode ProgressReporter::mode_for_stderr(bool quiet) {
  if (quiet) return Mode::kQuiet;
  return isatty(STDERR_FILENO) ? Mode::kBar : Mode::kLog;
}

ProgressReporter::ProgressReporter(Mode mode, double log_interval_seconds, std::optional<uint64_t> num_total_requests,
                                   int64_t num_pool_blocks)
    : mode_(mode),
      interval_(mode == Mode::kBar ? kBarRedrawSeconds : log_interval_seconds),
      num_total_(num_total_requests),
      num_pool_blocks_(num_pool_blocks) {}

void ProgressReporter::update(uint64_t num_done_requests, int64_t num_generated_tokens, int64_t num_used_blocks) {
  num_done_ = num_done_requests;
  num_generated_tokens_ = num_generated_tokens;
  num_used_blocks_ = num_used_blocks;
  if (mode_ == Mode::kQuiet || Clock::now() - last_print_ < interval_) return;
  print();
}

void ProgressReporter::finish() {
  if (mode_ == Mode::kQuiet) return;
  print();
  if (printed_bar_) fmt::print(stderr, "\n");
}

std::string ProgressReporter::figures() const {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  std::string out =
      num_total_ ? fmt::format("{}/{} requests", num_done_, *num_total_) : fmt::format("{} requests", num_done_);
  out += fmt::format("  {:.1f} tok/s", elapsed > 0 ? static_cast<double>(num_generated_tokens_) / elapsed : 0.0);
  // While requests remain, at least a second: "0:00:00" would claim the run is over.
  if (num_total_ && num_done_ > 0 && num_done_ < *num_total_)
    out += fmt::format("  ETA {}", format_duration(std::max(1.0, elapsed / static_cast<double>(num_done_) *
                                                                     static_cast<double>(*num_total_ - num_done_))));
  out += fmt::format("  KV {}/{} blocks", num_used_blocks_, num_pool_blocks_);
  return out;
}

void ProgressReporter::print() {
  last_print_ = Clock::now();
  if (mode_ == Mode::kLog) {
    fmt::print(stderr, "pagedgen: {}\n", figures());
    return;
  }
  std::string bar;
  if (num_total_) {
    const uint64_t total = std::max<uint64_t>(*num_total_, 1);
    const auto filled = static_cast<int>(std::min<uint64_t>(num_done_, total) * kBarWidth / total);
    bar = fmt::format("[{}{}] ", std::string(static_cast<std::size_t>(filled), '#'),
                      std::string(static_cast<std::size_t>(kBarWidth - filled), '.'));
  }
  // "\r" returns to the line's start, "\x1b[K" clears what a longer previous line left.
  fmt::print(stderr, "\r{}{}\x1b[K", bar, figures());
  std::fflush(stderr);
  printed_bar_ = true;
}

}  // namespace pagedgen::app
