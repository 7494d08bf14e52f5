// Splits [0, n) into contiguous chunks over `num_threads` threads (the caller's thread
// takes the first chunk). Deterministic: each index is handled by exactly one call, and
// the split never changes results because work items are independent.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace pagedgen {

template <typename Fn>
void parallel_for(std::size_t n, std::size_t num_threads, Fn&& fn) {
  num_threads = std::max<std::size_t>(1, std::min(num_threads, n));
  if (num_threads == 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  const std::size_t chunk = (n + num_threads - 1) / num_threads;
  auto run = [&](std::size_t t) {
    const std::size_t end = std::min(n, (t + 1) * chunk);
    for (std::size_t i = t * chunk; i < end; ++i) fn(i);
  };
  std::vector<std::jthread> workers;
  workers.reserve(num_threads - 1);
  for (std::size_t t = 1; t < num_threads; ++t) workers.emplace_back(run, t);
  run(0);
}

// The number of threads to use by default: the machine's hardware threads.
inline std::size_t default_num_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace pagedgen
