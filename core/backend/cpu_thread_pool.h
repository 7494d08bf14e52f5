// A fixed set of worker threads for the CPU backend's many short parallel regions (a GEMM
// or an attention pass takes tens of microseconds at decode), so that no region pays for
// starting threads. Which thread runs a task never changes any result: tasks are
// independent and each writes only its own outputs.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
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

  // A region is published in two steps of epoch_: odd while region_ is being rewritten
  // (after every worker has left the last one: active_ == 0), even once it is ready. A
  // worker enters region e (even) by counting itself in active_ and then checking that
  // epoch_ is still e, so region_ never changes under a worker that is inside. All of it
  // is spinning on atomics, a fraction of a microsecond per region; a worker that waits
  // long sleeps in epoch_.wait() and is woken only when it said so (sleepers_).
  std::vector<std::thread> workers_;
  Region region_;
  alignas(64) std::atomic<uint64_t> epoch_{0};
  alignas(64) std::atomic<uint32_t> active_{0};
  std::atomic<uint32_t> sleepers_{0};
  std::atomic<bool> stopping_{false};
  alignas(64) std::atomic<std::size_t> next_task_{0};
  alignas(64) std::atomic<std::size_t> completed_tasks_{0};
};

}  // namespace pagedgen::cpu
