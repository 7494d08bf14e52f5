// DecodeGraphs: the CUDA graphs of decode steps. A decode step (one new token per
// sequence) runs padded to a batch-size bucket (decode_bucket), as segments: the kernels
// between two attention launches (attention's launches depend on the context lengths and
// stay eager). Each (bucket, segment) runs eagerly the first time, is captured from the
// stream the second time and replayed after; its kernels read fixed addresses
// (activations, weights, the KV pool, the decode step's row arrays), which the backend
// refills before each replay. A graph holds exactly the launches the eager path makes,
// with the same arguments: with graphs off the same segments are launched one kernel at a
// time. The eager first run does every first-time host step of those launches outside a
// capture: cublasLt's heuristic query and descriptors for each GEMM shape of the bucket
// (cuda_gemm.h), and the loading of each kernel's module (lazy loading), so a capture
// records only launches that have run before.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
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

  // Queues segment `segment` at `bucket` on `stream`: `queue` itself (which launches the
  // segment's kernels on `stream`) the first time, its graph captured from `queue` the
  // second, that graph after. `buffers` names the addresses the kernels read (a count
  // bumped whenever one moves): graphs captured (and first runs made) under another value
  // are dropped first.
  void run(int32_t bucket, int32_t segment, uint64_t buffers, cudaStream_t stream, const std::function<void()>& queue);

  void clear();
  std::size_t num_graphs() const { return graphs_.size(); }

 private:
  using Key = std::pair<int32_t, int32_t>;  // (bucket, segment)
  void capture(const Key& key, cudaStream_t stream, const std::function<void()>& queue);

  std::set<Key> ran_eagerly_;  // first runs made, not captured yet
  std::map<Key, cudaGraphExec_t> graphs_;
  uint64_t buffers_ = 0;
};

}  // namespace pagedgen::gpu
