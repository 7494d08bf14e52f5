// Test helper: a weight upload plan (model/weight_upload_plan.h) run on the host with the
// device kernel's CPU reference (convert_chunk), into buffers of the layout's sizes: what
// the CUDA backend's two weight buffers must hold, byte for byte.
#pragma once

#include <cstddef>
#include <cstring>
#include <vector>

#include "model/device_weight_layout.h"
#include "model/tensor_chunks.h"
#include "weight_upload_plan.h"

namespace pagedgen::test {

struct HostWeightBuffers {
  std::vector<std::byte> typed;    // layout.typed_bytes(); padding left as 0xA5
  std::vector<std::byte> float32;  // layout.float32_bytes()
};

inline HostWeightBuffers run_plan_on_host(const WeightUploadPlan& plan, const DeviceWeightLayout& layout) {
  HostWeightBuffers out{std::vector<std::byte>(layout.typed_bytes(), std::byte{0xA5}),
                        std::vector<std::byte>(layout.float32_bytes(), std::byte{0xA5})};
  for (const TensorUpload& upload : plan.uploads()) {
    const auto type = static_cast<GgmlType>(upload.tensor->raw_type);
    const WeightDtype to = upload.placement->typed ? layout.dtype() : WeightDtype::kFloat32;
    std::vector<std::byte>& buffer = upload.placement->typed ? out.typed : out.float32;
    for (const TensorChunk& chunk : upload.chunks) {
      const std::size_t at = (upload.placement->offset + chunk.first_element) * weight_dtype_bytes(to);
      convert_chunk(type, upload.tensor->data.subspan(chunk.first_byte, chunk.num_bytes), to,
                    std::span(buffer).subspan(at, chunk.num_elements * weight_dtype_bytes(to)));
    }
  }
  for (const ComputedWeights& computed : plan.computed())
    std::memcpy(out.float32.data() + computed.placement->offset * sizeof(float), computed.values.data(),
                computed.values.size() * sizeof(float));
  return out;
}

}  // namespace pagedgen::test
