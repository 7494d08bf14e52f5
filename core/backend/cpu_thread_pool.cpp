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
constexpr int kSpinRounds = 20000;

}  // namespace

CpuThreadPool::CpuThreadPool(std::size_t num_threads) {
  PG_CHECK(num_threads >= 1, "a thread pool needs at least one thread");
  workers_.reserve(num_threads - 1);
  for (std::size_t t = 1; t < num_threads; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

CpuThreadPool::~CpuThreadPool() {
  stopping_.store(true);
  epoch_.fetch_add(2);
  epoch_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void CpuThreadPool::run_tasks(std::size_t num_tasks, TaskFn call, void* context) {
  if (num_tasks == 0) return;
  if (workers_.empty() || num_tasks == 1) {
    for (std::size_t task = 0; task < num_tasks; ++task) call(context, task, 0);
    return;
  }
  epoch_.fetch_add(1);                      // odd: no worker enters now
  while (active_.load() != 0) cpu_relax();  // stragglers of the last region leave
  region_ = Region{call, context, num_tasks};
  next_task_.store(0, std::memory_order_relaxed);
  completed_tasks_.store(0, std::memory_order_relaxed);
  epoch_.fetch_add(1);  // even: published
  if (sleepers_.load() != 0) epoch_.notify_all();
  work_on(region_, 0);
  while (completed_tasks_.load(std::memory_order_acquire) != num_tasks) cpu_relax();
}

void CpuThreadPool::work_on(const Region& region, std::size_t thread) {
  for (;;) {
    const std::size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= region.num_tasks) return;
    region.call(region.context, task, thread);
    completed_tasks_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void CpuThreadPool::worker_loop(std::size_t thread) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t epoch = epoch_.load();
    for (int spin = 0; spin < kSpinRounds && (epoch == seen || epoch % 2 != 0); ++spin) {
      cpu_relax();
      epoch = epoch_.load();
    }
    if (epoch == seen || epoch % 2 != 0) {  // nothing for a while: sleep until epoch_ moves
      sleepers_.fetch_add(1);
      epoch_.wait(epoch);
      sleepers_.fetch_sub(1);
      continue;
    }
    if (stopping_.load()) return;
    active_.fetch_add(1);
    if (epoch_.load() == epoch) {  // still that region: it stays put until this worker leaves
      seen = epoch;
      work_on(region_, thread);
    }
    active_.fetch_sub(1);
  }
}

}  // namespace pagedgen::cpu
