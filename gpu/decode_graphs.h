// DecodeGraphs: the CUDA graphs of decode steps. A decode step (one new token per
// sequence) runs padded to a batch-size bucket (decode_bucket), as segments: the kernels
// between two attention launches (attention's launches depend on the context lengths and
// stay eager). Each (bucket, segment) is captured from the stream the first time it runs
// and replayed after; its kernels read fixed addresses (activations, weights, the KV
// pool, the decode step's row arrays), which the backend refills before each replay. A
// graph holds exactly the launches the eager path makes, with the same arguments: with
// graphs off the same segments are launched one kernel at a time.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <map>
#include <utility>

namespace pagedgen::gpu {

// The bucket of a decode step of num_seqs sequences: the smallest of 1, 2, 4, 8, 16, 24,
// 32, ... (multiples of 8) that holds it.
int32_t decode_bucket(int32_t num_seqs);

class DecodeGraphs {
 public:
  DecodeGraphs() = default;
  ~DecodeGraphs() { clear(); }
  DecodeGraphs(const DecodeGraphs&) = delete;
  DecodeGraphs& operator=(const DecodeGraphs&) = delete;

  // Queues segment `segment` at `bucket` on `stream`: its graph, captured from `queue`
  // (which launches the segment's kernels on `stream`) the first time. `buffers` names
  // the addresses the kernels read (a count bumped whenever one moves): graphs captured
  // under another value are dropped first.
  void run(int32_t bucket, int32_t segment, uint64_t buffers, cudaStream_t stream, const std::function<void()>& queue);

  void clear();
  std::size_t num_graphs() const { return graphs_.size(); }

 private:
  std::map<std::pair<int32_t, int32_t>, cudaGraphExec_t> graphs_;
  uint64_t buffers_ = 0;
};

}  // namespace pagedgen::gpu
