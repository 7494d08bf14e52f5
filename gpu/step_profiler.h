// StepProfiler: where the time of a real run's steps goes on the device, for the CUDA
// backend when PAGEDGEN_GPU_PROFILE=1 (without it the backend makes none: no event, no
// cost). CUDA events on the backend's stream around each piece of a submitted step:
//
//   step N:  [uploads .. kernels up to attention 0] [attention 0] [kernels] [attention 1] ... [sampling]
//             forward piece                          attention     forward   attention         sampling
//
// and per step:
//   GPU time    the sum of its pieces' device times (a gap where the device waited for the
//               host between two pieces is left out; one inside a piece, e.g. the launch
//               latency when the device was idle, is counted)
//   span        device time from its first piece's start to its last piece's end
//   wall time   host time from its submit to the next step's submit (the last step's: to
//               its collect), the period of the step loop: above the GPU time, the host
//               (or the gaps between pieces) sets the pace
// summed by kind: decode (one new token per sequence) and prefill (any prompt chunk). The
// backend prints summary() on stderr when it is destroyed.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace pagedgen::gpu {

enum class ProfiledPiece { kForward, kAttention, kSampling };

class StepProfiler {
 public:
  // Whether the environment asks for it: PAGEDGEN_GPU_PROFILE=1.
  static bool requested();

  explicit StepProfiler(cudaStream_t stream) : stream_(stream) {}
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  // A step is submitted: its pieces follow, until end_step.
  void begin_step(bool decode, int32_t num_tokens);
  void end_step() { open_ = false; }
  // A piece of the open step (ignored outside one: forward() runs unprofiled).
  void begin_piece(ProfiledPiece kind);
  void end_piece();
  // The oldest submitted step has been collected: reads its events.
  void finish_step();

  // The table of the finished steps, by kind.
  std::string summary() const;

 private:
  struct Piece {
    ProfiledPiece kind;
    cudaEvent_t start, stop;
  };
  struct Step {
    bool decode;
    int32_t num_tokens;
    std::vector<Piece> pieces;
  };
  struct Totals {
    int64_t steps = 0, tokens = 0;
    double gpu_s = 0, span_s = 0, wall_s = 0, attention_s = 0, sampling_s = 0;
  };
  using Clock = std::chrono::steady_clock;

  cudaEvent_t take_event();
  Totals& totals(bool decode) { return decode ? decode_ : prefill_; }

  cudaStream_t stream_;
  bool open_ = false;
  std::deque<Step> in_flight_;
  std::vector<cudaEvent_t> free_events_;
  std::vector<cudaEvent_t> all_events_;  // destroyed with the profiler
  Totals decode_, prefill_;
  // The step submitted last, whose wall time ends at the next submit (or at its collect).
  std::optional<bool> last_decode_;
  Clock::time_point last_submit_;
  Clock::time_point last_finish_;
};

}  // namespace pagedgen::gpu
