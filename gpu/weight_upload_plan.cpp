#include "weight_upload_plan.h"

#include <algorithm>

#include "model/dequant.h"
#include "model/fused_tensors.h"

namespace pagedgen {

WeightUploadPlan::WeightUploadPlan(const ModelConfig& config, const DeviceWeightLayout& layout,
                                   std::span<const RawTensor> file_tensors, const std::string& source,
                                   std::size_t max_chunk_bytes)
    : tensors_(split_fused_tensors(file_tensors, config, source)) {
  for (const WeightPlacement& placement : layout.placements()) {
    if (placement.name == DeviceWeightLayout::kRopeInvFreq || placement.name == DeviceWeightLayout::kWindowRopeInvFreq)
      continue;
    const RawTensor* raw = find_raw_tensor(tensors_, placement.name);
    if (raw == nullptr) fail_missing_tensor(source, placement.name, config.architecture);
    check_raw_tensor(*raw, placement.shape, source);
    TensorUpload upload{raw, &placement,
                        tensor_chunks(static_cast<GgmlType>(raw->raw_type), placement.num_elements, max_chunk_bytes)};
    for (const TensorChunk& chunk : upload.chunks) max_chunk_bytes_ = std::max(max_chunk_bytes_, chunk.num_bytes);
    uploads_.push_back(std::move(upload));
  }
  // Llama 3 GGUF files may carry the RoPE frequency divisors as a tensor (rope_dim / 2 values).
  std::vector<float> divisors;
  const std::vector<uint64_t> divisors_shape{static_cast<uint64_t>(config.rope_dim / 2)};
  if (const RawTensor* raw = find_raw_tensor(tensors_, "rope_freqs.weight")) {
    check_raw_tensor(*raw, divisors_shape, source);
    divisors.resize(divisors_shape[0]);
    dequantize(static_cast<GgmlType>(raw->raw_type), raw->data, divisors);
  }
  computed_ = layout.computed(config, divisors.empty() ? nullptr : divisors.data());
}

}  // namespace pagedgen
