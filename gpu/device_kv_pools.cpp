#include "device_kv_pools.h"

#include <fmt/format.h>

#include <string>
#include <unordered_set>
#include <utility>

#include "cuda_check.h"
#include "kv_cache_kernels.h"
#include "util/byte_units.h"
#include "util/error.h"

namespace pagedgen::gpu {

namespace {

// The message of a pool that does not fit: its kinds' blocks and bytes, and what is free.
[[noreturn]] void fail_pool_too_large(const KvPoolShape& shape, std::size_t bytes) {
  cudaGetLastError();  // the failed cudaMalloc's error, not a sticky one
  std::size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  std::string blocks;
  for (const KvLayout& layout : shape.layouts())
    blocks += fmt::format("{}{}", blocks.empty() ? "" : " + ", layout.num_blocks);
  fail_setting("kv_pool", "asks too much: the KV pool of {} blocks ({}) does not fit in device memory ({} free)",
               blocks, format_bytes(bytes), format_bytes(free_bytes));
}

}  // namespace

void DeviceKvPools::allocate(KvPoolShape shape, std::size_t element_bytes, cudaStream_t stream) {
  PG_CHECK(shape.layouts().size() <= kMaxKvKinds, "{} layer kinds, at most {}", shape.layouts().size(), kMaxKvKinds);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  pools_ = DeviceBuffer();
  ++generation_;
  shape_ = std::move(shape);
  element_bytes_ = element_bytes;
  // Kind by kind, each kind's layers in order: K then V of each.
  std::size_t elements = 0;
  kind_offset_.assign(shape_.layouts().size(), 0);
  layer_offset_.assign(shape_.num_layers(), 0);
  for (std::size_t kind = 0; kind < kind_offset_.size(); ++kind) {
    kind_offset_[kind] = elements;
    for (std::size_t layer = 0; layer < layer_offset_.size(); ++layer) {
      if (static_cast<std::size_t>(shape_.layer_kind(layer)) != kind) continue;
      layer_offset_[layer] = elements;
      elements += 2 * static_cast<std::size_t>(shape_.layouts()[kind].elements_per_layer());
    }
  }
  const std::size_t bytes = elements * element_bytes_;
  void* probe = nullptr;
  if (cudaMalloc(&probe, bytes) != cudaSuccess) fail_pool_too_large(shape_, bytes);
  CUDA_CHECK(cudaFree(probe));
  pools_ = DeviceBuffer(bytes);
  CUDA_CHECK(cudaMemsetAsync(pools_.data(), 0, bytes, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

void* DeviceKvPools::k_pool(std::size_t layer) const {
  return pools_.as<std::byte>() + layer_offset_[layer] * element_bytes_;
}

void* DeviceKvPools::v_pool(std::size_t layer) const {
  const auto k_elements = static_cast<std::size_t>(shape_.layer_layout(layer).elements_per_layer());
  return pools_.as<std::byte>() + (layer_offset_[layer] + k_elements) * element_bytes_;
}

void DeviceKvPools::copy_blocks(std::span<const BlockCopy> copies, StagedUpload& upload, cudaStream_t stream) const {
  const std::vector<BlockCopy> list = shape_.moving_copies(copies);
  if (list.empty()) return;
  ArrayPack pack;
  const PackedArray<BlockCopy> packed = pack.add(std::span<const BlockCopy>(list));
  const BlockCopy* device_copies = packed.in(upload.upload(pack, stream));
  // Copies run in order: a launch takes copies of one kind until one touches a block an
  // earlier copy of the launch reads or writes (a kind's pools sit back to back).
  std::unordered_set<int32_t> read, written;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const BlockCopy& copy = list[i];
    if (copy.kind != list[begin].kind || written.contains(copy.src) || written.contains(copy.dst) ||
        read.contains(copy.dst)) {
      launch_copies(device_copies + begin, i - begin, list[begin].kind, stream);
      begin = i;
      read.clear();
      written.clear();
    }
    read.insert(copy.src);
    written.insert(copy.dst);
  }
  launch_copies(device_copies + begin, list.size() - begin, list[begin].kind, stream);
}

void DeviceKvPools::launch_copies(const BlockCopy* device_copies, std::size_t num_copies, KvKindId kind,
                                  cudaStream_t stream) const {
  const KvLayout& layout = shape_.layout(kind);
  const auto element_bytes = static_cast<int64_t>(element_bytes_);
  launch_copy_blocks(
      BlockCopyArgs{device_copies, static_cast<int32_t>(num_copies),
                    pools_.as<std::byte>() + kind_offset_[static_cast<std::size_t>(kind)] * element_bytes_,
                    layout.elements_per_layer() * element_bytes, 2 * shape_.num_layers_of_kind(kind),
                    layout.block_stride() * element_bytes},
      stream);
}

}  // namespace pagedgen::gpu
