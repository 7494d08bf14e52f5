// StopToken: whether the run has been asked to stop (app/interrupt.h raises its flag on
// SIGINT or SIGTERM), read wherever a phase can take long: reading and parsing input,
// compiling a schema and its token masks, loading weights, planning, stepping. A loop that
// can simply end reads stop_requested(); a phase deep in a call stack calls
// throw_if_stopped(), and Stopped unwinds to whoever ends the run as interrupted (the batch
// job, or app/ before the job starts). StopPoll reads the token once per many small items.
//
//   StopPoll poll(stop);
//   for (auto field : object) { poll.tick(); ... }  // one read per kItemsPerPoll fields
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>

namespace pagedgen {

// Thrown by throw_if_stopped. Not an Error: no catch of a bad line or a bad file takes it
// for one of those, so it reaches the catch that ends the run.
class Stopped : public std::exception {
 public:
  const char* what() const noexcept override { return "the run was asked to stop"; }
};

class StopToken {
 public:
  StopToken() = default;  // never asks to stop
  // `flag`, non-zero once a stop is asked for, must outlive every copy of the token.
  explicit StopToken(const std::atomic<int>* flag) : flag_(flag) {}

  // One relaxed load: cheap enough for any loop.
  bool stop_requested() const { return flag_ != nullptr && flag_->load(std::memory_order_relaxed) != 0; }
  void throw_if_stopped() const {
    if (stop_requested()) throw Stopped();
  }

 private:
  const std::atomic<int>* flag_ = nullptr;
};

// Reads a token every kItemsPerPoll ticks, for loops over many small items (the keys of a
// line, the elements of a list, the nodes of a schema): about a millisecond apart at most.
class StopPoll {
 public:
  static constexpr uint32_t kItemsPerPoll = 4096;

  explicit StopPoll(StopToken token) : token_(token) {}

  void tick() {
    if (++num_items_ % kItemsPerPoll == 0) token_.throw_if_stopped();
  }
  const StopToken& token() const { return token_; }

 private:
  StopToken token_;
  uint32_t num_items_ = 0;
};

}  // namespace pagedgen
