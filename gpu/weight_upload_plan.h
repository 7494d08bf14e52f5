// How a model file's tensors reach the CUDA backend's buffers (model/device_weight_layout.h)
// one at a time, without a converted copy of the model on the host: each tensor the layout
// places, found and checked in the file (fused Phi-3 tensors split into their parts, views
// of the same bytes), cut into chunks of whole blocks that fit a staging buffer
// (model/tensor_chunks.h). The backend copies a chunk's stored bytes from the file mapping
// to the device and converts them there; here on the host is only the plan, and the RoPE
// tables, which are computed. Plain C++: tests run the plan on the CPU with
// convert_chunk and compare the buffers with the float32 weights converted whole.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "model/device_weight_layout.h"
#include "model/model_config.h"
#include "model/raw_tensor.h"
#include "model/tensor_chunks.h"

namespace pagedgen {

struct TensorUpload {
  const RawTensor* tensor;           // in the plan's tensors()
  const WeightPlacement* placement;  // in the layout given
  std::vector<TensorChunk> chunks;   // each at most the plan's max_chunk_bytes (or one block)
};

class WeightUploadPlan {
 public:
  // Throws Error naming the tensor and `source` when one the layout places is missing,
  // has the wrong shape or a type pagedgen cannot load (as load_model_weights does).
  // `layout` must outlive the plan; `file_tensors` (their bytes) too.
  WeightUploadPlan(const ModelConfig& config, const DeviceWeightLayout& layout, std::span<const RawTensor> file_tensors,
                   const std::string& source, std::size_t max_chunk_bytes);
  WeightUploadPlan(const WeightUploadPlan&) = delete;
  WeightUploadPlan& operator=(const WeightUploadPlan&) = delete;

  // Every placed file tensor, in layout order.
  const std::vector<TensorUpload>& uploads() const { return uploads_; }
  // The values of the layout's computed placements (float32): the RoPE tables.
  const std::vector<ComputedWeights>& computed() const { return computed_; }
  // The largest chunk, in stored bytes: what a staging buffer must hold.
  std::size_t max_chunk_bytes() const { return max_chunk_bytes_; }

 private:
  std::vector<RawTensor> tensors_;  // the file's, fused ones split
  std::vector<TensorUpload> uploads_;
  std::vector<ComputedWeights> computed_;
  std::size_t max_chunk_bytes_ = 0;
};

}  // namespace pagedgen
