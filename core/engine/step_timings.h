// Where the host time of one engine step went, by phase, for the host-overhead benchmark
// (scripts/bench_host_overhead.cpp). Measured on every step, kept for the last one only;
// never part of the stats JSON.
#pragma once

namespace pagedgen {

struct StepTimings {
  double schedule_seconds = 0;        // Scheduler::schedule(), which also builds the StepBatch
  double sampling_batch_seconds = 0;  // rejected records, starts, the SamplingBatch (random draws), overlap tokens
  double submit_seconds = 0;          // Backend::copy_blocks + Backend::submit (all of a synchronous backend's step)
  double wait_seconds = 0;            // Backend::collect: waiting for ids (the step before's, or this one's)
  double overlap_output_seconds = 0;  // OutputProcessor::finish_overlap: the step before's ids, while this one runs
  double step_done_seconds = 0;       // Scheduler::on_step_done + the step's KV memory figures
  double output_seconds = 0;          // OutputProcessor::apply (stops, forks, finished records), or start_overlap
  bool overlapped = false;            // this step was applied before its ids (the overlap)
  bool computes_prompt = false;       // some chunk of the step computed prompt positions
};

}  // namespace pagedgen
