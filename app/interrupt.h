// SIGINT and SIGTERM while `generate` runs: the first one raises the flag of stop_token(),
// which every long phase reads (util/stop_token.h), so the run stops within about a
// millisecond wherever it is (flush the output, exit with kExitInterrupted); the handler
// then gives the signal back its default action, so a second one ends the process at once.
#pragma once

#include <signal.h>

#include "util/stop_token.h"

namespace pagedgen::app {

class InterruptGuard {
 public:
  InterruptGuard();   // installs the handlers
  ~InterruptGuard();  // restores the previous ones
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // The signal received since construction (SIGINT or SIGTERM), or 0.
  int signal_received() const;
  // Asks to stop once a signal is received.
  StopToken stop_token() const;

 private:
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};

}  // namespace pagedgen::app
