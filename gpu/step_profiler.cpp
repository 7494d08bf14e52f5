#include "step_profiler.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include "cuda_check.h"

namespace pagedgen::gpu {

bool StepProfiler::requested() {
  const char* value = std::getenv("PAGEDGEN_GPU_PROFILE");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

StepProfiler::~StepProfiler() {
  for (cudaEvent_t event : all_events_) cudaEventDestroy(event);
}

cudaEvent_t StepProfiler::take_event() {
  if (free_events_.empty()) {
    cudaEvent_t event = nullptr;
    CUDA_CHECK(cudaEventCreate(&event));
    all_events_.push_back(event);
    return event;
  }
  const cudaEvent_t event = free_events_.back();
  free_events_.pop_back();
  return event;
}

void StepProfiler::begin_step(bool decode, int32_t num_tokens) {
  if (open_) {  // the step before threw in its submit: never collected, not counted
    for (const Piece& piece : in_flight_.back().pieces) {
      free_events_.push_back(piece.start);
      free_events_.push_back(piece.stop);
    }
    in_flight_.pop_back();
  }
  const Clock::time_point now = Clock::now();
  if (last_decode_) totals(*last_decode_).wall_s += std::chrono::duration<double>(now - last_submit_).count();
  last_decode_ = decode;
  last_submit_ = now;
  in_flight_.push_back(Step{decode, num_tokens, {}});
  open_ = true;
}

void StepProfiler::begin_piece(ProfiledPiece kind) {
  if (!open_) return;
  Piece piece{kind, take_event(), take_event()};
  CUDA_CHECK(cudaEventRecord(piece.start, stream_));
  in_flight_.back().pieces.push_back(piece);
}

void StepProfiler::end_piece() {
  if (!open_) return;
  CUDA_CHECK(cudaEventRecord(in_flight_.back().pieces.back().stop, stream_));
}

void StepProfiler::finish_step() {
  if (in_flight_.empty()) return;
  Step step = std::move(in_flight_.front());
  in_flight_.pop_front();
  last_finish_ = Clock::now();
  Totals& t = totals(step.decode);
  ++t.steps;
  t.tokens += step.num_tokens;
  if (step.pieces.empty()) return;
  // The collect waited for the sampler's results, recorded just before the last stop.
  CUDA_CHECK(cudaEventSynchronize(step.pieces.back().stop));
  const auto seconds = [](cudaEvent_t from, cudaEvent_t to) {
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
    return ms * 1e-3;
  };
  for (const Piece& piece : step.pieces) {
    const double s = seconds(piece.start, piece.stop);
    t.gpu_s += s;
    if (piece.kind == ProfiledPiece::kAttention) t.attention_s += s;
    if (piece.kind == ProfiledPiece::kSampling) t.sampling_s += s;
    free_events_.push_back(piece.start);
    free_events_.push_back(piece.stop);
  }
  t.span_s += seconds(step.pieces.front().start, step.pieces.back().stop);
}

std::string StepProfiler::summary() const {
  if (decode_.steps + prefill_.steps == 0) return "pagedgen: GPU profile (PAGEDGEN_GPU_PROFILE=1): no step ran\n";
  Totals decode = decode_, prefill = prefill_;
  // The last step's wall time ends at its collect (when it was collected).
  if (last_decode_ && in_flight_.empty())
    (*last_decode_ ? decode : prefill).wall_s += std::chrono::duration<double>(last_finish_ - last_submit_).count();
  std::string out = fmt::format(
      "pagedgen: GPU profile (PAGEDGEN_GPU_PROFILE=1): CUDA events around each step's pieces\n"
      "{:<8} {:>7} {:>12} {:>12} {:>13} {:>13} {:>9} {:>11} {:>10}\n",
      "step", "steps", "tokens/step", "GPU ms/step", "span ms/step", "wall ms/step", "wall/GPU", "attention",
      "sampling");
  for (const auto& [name, t] : {std::pair{"decode", decode}, std::pair{"prefill", prefill}}) {
    if (t.steps == 0) continue;
    const auto n = static_cast<double>(t.steps);
    const auto share = [&](double s) { return t.gpu_s > 0 ? 100.0 * s / t.gpu_s : 0.0; };
    out += fmt::format("{:<8} {:>7} {:>12.1f} {:>12.3f} {:>13.3f} {:>13.3f} {:>9.2f} {:>10.1f}% {:>9.1f}%\n", name,
                       t.steps, static_cast<double>(t.tokens) / n, 1e3 * t.gpu_s / n, 1e3 * t.span_s / n,
                       1e3 * t.wall_s / n, t.gpu_s > 0 ? t.wall_s / t.gpu_s : 0.0, share(t.attention_s),
                       share(t.sampling_s));
  }
  out +=
      "GPU: the step's pieces on the device (uploads and kernels, attention launches, sampling), summed; span: "
      "its first piece's start to its last piece's end; wall: host time from its submit to the next one's; "
      "attention and sampling: shares of GPU time\n";
  return out;
}

}  // namespace pagedgen::gpu
