// CpuThreadPool: every task runs exactly once per region, on a thread index in range, over
// many back-to-back regions of every size.
#include <doctest/doctest.h>

#include <atomic>
#include <vector>

#include "backend/cpu_thread_pool.h"

using namespace pagedgen;

TEST_CASE("each task of each region runs exactly once") {
  for (std::size_t num_threads : {1u, 2u, 3u}) {
    cpu::CpuThreadPool pool(num_threads);
    CHECK(pool.num_threads() == num_threads);
    for (std::size_t round = 0; round < 2000; ++round) {
      const std::size_t num_tasks = round % 37;  // 0, 1, and sizes above and below the thread count
      std::vector<std::atomic<int>> runs(num_tasks);
      std::atomic<int> bad_thread{0};
      pool.run(num_tasks, [&](std::size_t task, std::size_t thread) {
        runs[task].fetch_add(1);
        if (thread >= num_threads) bad_thread.fetch_add(1);
      });
      int wrong = 0;
      for (const auto& r : runs) wrong += r.load() != 1;
      REQUIRE(wrong == 0);
      REQUIRE(bad_thread.load() == 0);
    }
  }
}

TEST_CASE("the caller sees every task's writes when run returns") {
  cpu::CpuThreadPool pool(2);
  std::vector<std::size_t> out(1000);
  for (std::size_t round = 1; round <= 50; ++round) {
    pool.run(out.size(), [&](std::size_t task, std::size_t) { out[task] = task * round; });
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < out.size(); ++i) wrong += out[i] != i * round;
    REQUIRE(wrong == 0);
  }
}
