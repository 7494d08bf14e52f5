#include "interrupt.h"

#include <atomic>
#include <csignal>

namespace pagedgen::app {

namespace {

// A signal handler can only reach static storage: this flag is the one mutable global, set
// by the handler and read by the run's phases through StopToken. A lock-free atomic may be
// written from a signal handler.
std::atomic<int> received_signal = 0;
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_stop_signal(int signal) {
  received_signal.store(signal, std::memory_order_relaxed);
  std::signal(signal, SIG_DFL);
}

}  // namespace

InterruptGuard::InterruptGuard() {
  received_signal.store(0);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  action.sa_flags = SA_RESTART;  // reads of the input go on after the signal
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_int_);
  sigaction(SIGTERM, &action, &previous_term_);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
}

int InterruptGuard::signal_received() const { return received_signal.load(std::memory_order_relaxed); }

StopToken InterruptGuard::stop_token() const { return StopToken(&received_signal); }

}  // namespace pagedgen::app
