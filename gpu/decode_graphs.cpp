#include "decode_graphs.h"

#include "cuda_check.h"

namespace pagedgen::gpu {

int32_t decode_bucket(int32_t num_seqs) {
  if (num_seqs <= 1) return 1;
  if (num_seqs <= 2) return 2;
  if (num_seqs <= 4) return 4;
  return (num_seqs + 7) / 8 * 8;
}

void DecodeGraphs::run(int32_t bucket, int32_t segment, uint64_t buffers, cudaStream_t stream,
                       const std::function<void()>& queue) {
  if (buffers != buffers_) {
    clear();
    buffers_ = buffers;
  }
  const Key key{bucket, segment};
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    if (ran_eagerly_.insert(key).second) {
      queue();
      return;
    }
    capture(key, stream, queue);
    it = graphs_.find(key);
  }
  CUDA_CHECK(cudaGraphLaunch(it->second, stream));
}

void DecodeGraphs::capture(const Key& key, cudaStream_t stream, const std::function<void()>& queue) {
  // Thread-local capture: a call that is not allowed while capturing (an allocation, a
  // synchronization) fails here instead of being recorded.
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    queue();
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    throw;
  }
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  CUDA_CHECK(status);
  ran_eagerly_.erase(key);
  graphs_.emplace(key, exec);
}

void DecodeGraphs::clear() {
  for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
  graphs_.clear();
  ran_eagerly_.clear();
}

}  // namespace pagedgen::gpu
