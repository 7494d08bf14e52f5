#include "backend/cpu_thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "util/error.h"

namespace pagedgen::cpu {

namespace {

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Spin this many rounds for the next region before sleeping: regions of one forward step
// follow each other within microseconds, and a futex wake-up costs more than that.
constexpr int kSpinRounds = 10000;

}  // namespace

CpuThreadPool::CpuThreadPool(std::size_t num_threads) {
  PG_CHECK(num_threads >= 1, "a thread pool needs at least one thread");
  workers_.reserve(num_threads - 1);
  for (std::size_t t = 1; t < num_threads; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

CpuThreadPool::~CpuThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void CpuThreadPool::run_tasks(std::size_t num_tasks, TaskFn call, void* context) {
  if (num_tasks == 0) return;
  if (workers_.empty() || num_tasks == 1) {
    for (std::size_t task = 0; task < num_tasks; ++task) call(context, task, 0);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    call_ = call;
    context_ = context;
    num_tasks_ = num_tasks;
    next_task_.store(0, std::memory_order_relaxed);
    num_busy_workers_.store(workers_.size(), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  work_on_current(0);
  // Wait until every worker has left the region, so that the next one may reuse the fields.
  for (int spin = 0; spin < kSpinRounds; ++spin) {
    if (num_busy_workers_.load(std::memory_order_acquire) == 0) return;
    cpu_relax();
  }
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return num_busy_workers_.load(std::memory_order_acquire) == 0; });
}

void CpuThreadPool::work_on_current(std::size_t thread) {
  for (;;) {
    const std::size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= num_tasks_) return;
    call_(context_, task, thread);
  }
}

void CpuThreadPool::worker_loop(std::size_t thread) {
  uint64_t seen = 0;
  for (;;) {
    bool ready = false;
    for (int spin = 0; spin < kSpinRounds && !ready; ++spin) {
      ready = generation_.load(std::memory_order_acquire) != seen;
      if (!ready) cpu_relax();
    }
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
      seen = generation_.load(std::memory_order_relaxed);
      if (stopping_) return;
    }
    work_on_current(thread);
    if (num_busy_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mutex_);
      done_.notify_all();
    }
  }
}

}  // namespace pagedgen::cpu
