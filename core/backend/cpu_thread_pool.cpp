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

// Spin this many rounds before sleeping: the regions of one forward step follow each
// other within microseconds, and a futex wake-up costs more than that.
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
  const Region region{call, context, num_tasks};
  if (workers_.empty() || num_tasks == 1) {
    for (std::size_t task = 0; task < num_tasks; ++task) call(context, task, 0);
    return;
  }
  {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return active_workers_ == 0; });  // stragglers of the last region
    region_ = region;
    next_task_.store(0, std::memory_order_relaxed);
    completed_tasks_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  work_on(region, 0);
  for (int spin = 0; spin < kSpinRounds; ++spin) {
    if (completed_tasks_.load(std::memory_order_acquire) == num_tasks) return;
    cpu_relax();
  }
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return completed_tasks_.load(std::memory_order_acquire) == num_tasks; });
}

void CpuThreadPool::work_on(const Region& region, std::size_t thread) {
  for (;;) {
    const std::size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= region.num_tasks) return;
    region.call(region.context, task, thread);
    if (completed_tasks_.fetch_add(1, std::memory_order_acq_rel) + 1 == region.num_tasks) {
      std::lock_guard lock(mutex_);
      done_.notify_all();
    }
  }
}

void CpuThreadPool::worker_loop(std::size_t thread) {
  uint64_t seen = 0;
  for (;;) {
    for (int spin = 0; spin < kSpinRounds && generation_.load(std::memory_order_acquire) == seen; ++spin) cpu_relax();
    Region region;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
      seen = generation_.load(std::memory_order_relaxed);
      if (stopping_) return;
      region = region_;
      ++active_workers_;
    }
    work_on(region, thread);
    {
      std::lock_guard lock(mutex_);
      if (--active_workers_ == 0) done_.notify_all();
    }
  }
}

}  // namespace pagedgen::cpu
