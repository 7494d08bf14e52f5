// A fixed set of worker threads for the CPU backend's many short parallel regions (a GEMM
// or an attention pass takes tens of microseconds at decode), so that no region pays for
// starting threads. Which thread runs a task never changes any result: tasks are
// independent and each writes only its own outputs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace pagedgen::cpu {

class CpuThreadPool {
 public:
  // num_threads counts the caller, which works too: 1 means no worker threads.
  explicit CpuThreadPool(std::size_t num_threads);
  ~CpuThreadPool();
  CpuThreadPool(const CpuThreadPool&) = delete;
  CpuThreadPool& operator=(const CpuThreadPool&) = delete;

  std::size_t num_threads() const { return workers_.size() + 1; }

  // Calls fn(task, thread) once for every task in [0, num_tasks), spread over the threads
  // (thread in [0, num_threads()), usable to index per-thread scratch), and returns when
  // all are done. Tasks are handed out one at a time in increasing order.
  template <typename Fn>
  void run(std::size_t num_tasks, Fn&& fn) {
    auto call = [](void* context, std::size_t task, std::size_t thread) {
      (*static_cast<std::remove_reference_t<Fn>*>(context))(task, thread);
    };
    run_tasks(num_tasks, call, const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  using TaskFn = void (*)(void* context, std::size_t task, std::size_t thread);
  struct Region {
    TaskFn call = nullptr;
    void* context = nullptr;
    std::size_t num_tasks = 0;
  };

  void run_tasks(std::size_t num_tasks, TaskFn call, void* context);
  void work_on(const Region& region, std::size_t thread);
  void worker_loop(std::size_t thread);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;  // a new region (or stop) was published
  std::condition_variable done_;  // all tasks completed, or the last worker left a region
  // The current region, published under mutex_ together with a new generation_. A worker
  // joins under mutex_ (active_workers_ + 1), so it never mixes two regions; a region
  // finishes when its tasks are done, whether or not a sleeping worker ever joined it,
  // and the next one is published only after every joined worker has left.
  std::atomic<uint64_t> generation_{0};
  Region region_;
  std::size_t active_workers_ = 0;  // guarded by mutex_
  bool stopping_ = false;           // guarded by mutex_
  std::atomic<std::size_t> next_task_{0};
  std::atomic<std::size_t> completed_tasks_{0};
};

}  // namespace pagedgen::cpu
