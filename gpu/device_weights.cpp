#include "device_weights.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "cuda_check.h"
#include "dtype_dispatch.h"
#include "model/device_weight_layout.h"
#include "model/dummy_weights.h"
#include "weight_upload_plan.h"
#include "staged_upload.h"
#include "util/error.h"
#include "util/mapped_file.h"
#include "weight_kernels.h"

namespace pagedgen::gpu {

namespace {

// Stored bytes per chunk: big enough that a copy and a kernel per chunk cost little next to
// the bytes moved, small next to any model.
constexpr std::size_t kMaxChunkBytes = std::size_t{64} << 20;

// Allocates the buffers of `layout` and sets every pointer of `w` into them.
void place_weights(DeviceWeights& w, const ModelConfig& c, const DeviceWeightLayout& layout, DeviceBuffer& typed,
                   DeviceBuffer& float32) {
  const std::size_t element_bytes = weight_dtype_bytes(layout.dtype());
  typed = DeviceBuffer(layout.typed_bytes());
  float32 = DeviceBuffer(layout.float32_bytes());
  auto matrix = [&](const std::string& name) -> const void* {
    return typed.as<std::byte>() + layout.at(name).offset * element_bytes;
  };
  auto vector = [&](const std::string& name) -> const float* { return float32.as<float>() + layout.at(name).offset; };
  w.token_embd = matrix("token_embd.weight");
  w.output = c.tied_embeddings ? w.token_embd : matrix("output.weight");
  w.output_norm = vector("output_norm.weight");
  w.rope_inv_freq = vector(std::string(DeviceWeightLayout::kRopeInvFreq));
  w.window_rope_inv_freq =
      c.window_rope_differs() ? vector(std::string(DeviceWeightLayout::kWindowRopeInvFreq)) : w.rope_inv_freq;
  w.layers.clear();
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    w.layers.push_back(
        DeviceLayerWeights{.attn_norm = vector(p + "attn_norm.weight"),
                           .wqkv = matrix(p + "attn_q.weight"),
                           .bqkv = c.qkv_bias ? vector(p + "attn_q.bias") : nullptr,
                           .q_norm = c.qk_norm ? vector(p + "attn_q_norm.weight") : nullptr,
                           .k_norm = c.qk_norm ? vector(p + "attn_k_norm.weight") : nullptr,
                           .wo = matrix(p + "attn_output.weight"),
                           .attn_post_norm = c.post_norms ? vector(p + "post_attention_norm.weight") : nullptr,
                           .ffn_norm = vector(p + "ffn_norm.weight"),
                           .w_gate_up = matrix(p + "ffn_gate.weight"),
                           .w_down = matrix(p + "ffn_down.weight"),
                           .ffn_post_norm = c.post_norms ? vector(p + "post_ffw_norm.weight") : nullptr});
  }
}

// The RoPE tables into the float32 buffer; returns once they are there (and everything queued
// before them on `stream`), so the host vectors may go.
void copy_computed(DeviceBuffer& float32, const std::vector<ComputedWeights>& computed, cudaStream_t stream) {
  for (const ComputedWeights& c : computed)
    CUDA_CHECK(cudaMemcpyAsync(float32.as<float>() + c.placement->offset, c.values.data(),
                               c.values.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

// One of the two staging slots a chunk goes through: pinned host bytes, their device copy,
// and the event after the kernel that read it (the slot is free again once it has run; an
// event never recorded counts as run).
struct StagingSlot {
  PinnedBuffer host;
  DeviceBuffer device;
  cudaEvent_t converted = nullptr;

  explicit StagingSlot(std::size_t bytes) : device(bytes) {
    host.reserve(bytes);
    CUDA_CHECK(cudaEventCreateWithFlags(&converted, cudaEventDisableTiming));
  }
  ~StagingSlot() {
    cudaEventSynchronize(converted);  // no copy or kernel still reads the buffers
    cudaEventDestroy(converted);
  }
  StagingSlot(const StagingSlot&) = delete;
  StagingSlot& operator=(const StagingSlot&) = delete;
};

}  // namespace

WeightDtype weight_dtype(DeviceDtype dtype) {
  switch (dtype) {
    case DeviceDtype::F32:
      return WeightDtype::kFloat32;
    case DeviceDtype::F16:
      return WeightDtype::kFloat16;
    case DeviceDtype::BF16:
      return WeightDtype::kBFloat16;
  }
  PG_CHECK(false, "unknown device dtype");
  return WeightDtype::kFloat32;
}

DeviceWeights DeviceWeights::upload(const ModelConfig& c, std::span<const RawTensor> tensors, const std::string& source,
                                    DeviceDtype dtype, cudaStream_t stream) {
  const DeviceWeightLayout layout(c, weight_dtype(dtype));
  const WeightUploadPlan plan(c, layout, tensors, source, kMaxChunkBytes);  // throws before any allocation
  DeviceWeights w;
  place_weights(w, c, layout, w.typed_, w.float32_);
  const std::size_t element_bytes = weight_dtype_bytes(layout.dtype());

  // Chunk k goes through slot k % 2: the host fills one slot from the file while the device
  // copies and converts the other.
  StagingSlot slots[2] = {StagingSlot(plan.max_chunk_bytes()), StagingSlot(plan.max_chunk_bytes())};
  std::size_t next = 0;
  for (const TensorUpload& upload : plan.uploads()) {
    const auto type = static_cast<GgmlType>(upload.tensor->raw_type);
    for (const TensorChunk& chunk : upload.chunks) {
      StagingSlot& slot = slots[next];
      next = 1 - next;
      CUDA_CHECK(cudaEventSynchronize(slot.converted));
      std::byte* host = slot.host.reserve(chunk.num_bytes);
      std::memcpy(host, upload.tensor->data.data() + chunk.first_byte, chunk.num_bytes);
      CUDA_CHECK(cudaMemcpyAsync(slot.device.data(), host, chunk.num_bytes, cudaMemcpyHostToDevice, stream));
      const auto n = static_cast<int64_t>(chunk.num_elements);
      const std::size_t first = upload.placement->offset + chunk.first_element;
      if (upload.placement->typed) {
        std::byte* dst = w.typed_.as<std::byte>() + first * element_bytes;
        dispatch_dtype(dtype, [&]<typename T>(TypeTag<T>) {
          launch_dequantize(type, slot.device.as<std::byte>(), n, reinterpret_cast<T*>(dst), stream);
        });
      } else {
        launch_dequantize(type, slot.device.as<std::byte>(), n, w.float32_.as<float>() + first, stream);
      }
      CUDA_CHECK(cudaEventRecord(slot.converted, stream));
    }
    release_mapped_pages(upload.tensor->data);  // copied to pinned memory: the file's pages can go
  }
  copy_computed(w.float32_, plan.computed(), stream);
  return w;
}

DeviceWeights DeviceWeights::dummy(const ModelConfig& c, uint64_t seed, DeviceDtype dtype, cudaStream_t stream) {
  DeviceWeights w;
  const DeviceWeightLayout layout(c, weight_dtype(dtype));
  place_weights(w, c, layout, w.typed_, w.float32_);
  const std::size_t element_bytes = weight_dtype_bytes(layout.dtype());
  const std::vector<DummyTensor> tensors = dummy_tensors(c);
  const std::vector<ComputedWeights> computed = layout.computed(c, nullptr);
  PG_CHECK(tensors.size() + computed.size() == layout.placements().size(),
           "{} dummy tensors and {} computed ones for {} placements", tensors.size(), computed.size(),
           layout.placements().size());
  for (std::size_t id = 0; id < tensors.size(); ++id) {
    const DummyTensor& t = tensors[id];
    const WeightPlacement& placement = layout.at(t.name);
    PG_CHECK(placement.num_elements == t.num_elements(), "dummy tensor '{}' has {} elements, placed {}", t.name,
             t.num_elements(), placement.num_elements);
    const auto n = static_cast<int64_t>(placement.num_elements);
    const auto tensor_id = static_cast<uint32_t>(id);
    if (!placement.typed) {
      launch_fill_dummy(w.float32_.as<float>() + placement.offset, n, seed, tensor_id, t.scale, t.ones, stream);
      continue;
    }
    std::byte* dst = w.typed_.as<std::byte>() + placement.offset * element_bytes;
    dispatch_dtype(dtype, [&]<typename T>(TypeTag<T>) {
      launch_fill_dummy(reinterpret_cast<T*>(dst), n, seed, tensor_id, t.scale, t.ones, stream);
    });
  }
  copy_computed(w.float32_, computed, stream);
  return w;
}

}  // namespace pagedgen::gpu
