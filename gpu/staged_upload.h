// Host arrays to the device in one asynchronous copy: ArrayPack lays them out back to back
// (256-byte aligned) and PackedArray finds each again in the copy, typed; StagedUpload
// copies the pack through pinned host memory into a device buffer, both grown on demand.
// PinnedBuffer is the page-locked memory such copies (and the device sampler's results on
// the way back) go through: cudaMemcpyAsync from pageable memory would not be asynchronous.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "cuda_check.h"
#include "device_buffer.h"

namespace pagedgen::gpu {

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() {
    if (data_ != nullptr) cudaFreeHost(data_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  // At least `bytes` bytes; the contents are lost when it grows.
  std::byte* reserve(std::size_t bytes) {
    if (bytes > bytes_) {
      if (data_ != nullptr) CUDA_CHECK(cudaFreeHost(data_));
      data_ = nullptr;
      CUDA_CHECK(cudaMallocHost(&data_, bytes));
      bytes_ = bytes;
    }
    return static_cast<std::byte*>(data_);
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Where an array of T sits in an ArrayPack: its byte offset, 256-byte aligned, so that the
// uploaded copy is an array of T at that offset from the device address of the pack.
template <typename T>
struct PackedArray {
  std::size_t offset = 0;

  // The array in the pack's copy at `base` (the address StagedUpload::upload returns).
  T* in(std::byte* base) const { return reinterpret_cast<T*>(base + offset); }
};

class ArrayPack {
 public:
  // Adds the array (its bytes are read by copy_to, so they must live until then).
  template <typename T>
  PackedArray<T> add(std::span<const T> values) {
    const std::size_t offset = size_;
    parts_.push_back({values.data(), values.size_bytes(), offset});
    size_ = (offset + values.size_bytes() + 255) / 256 * 256;
    return PackedArray<T>{offset};
  }
  std::size_t size() const { return size_; }
  void copy_to(std::byte* host) const {
    for (const Part& p : parts_)
      if (p.bytes > 0) std::memcpy(host + p.offset, p.data, p.bytes);
  }

 private:
  struct Part {
    const void* data;
    std::size_t bytes;
    std::size_t offset;
  };
  std::vector<Part> parts_;
  std::size_t size_ = 0;
};

// Host arrays to one device buffer, through a ring of pinned staging buffers: an upload
// fills the next staging buffer once the copy that last read it has run (its event), so
// the host can prepare a step while earlier copies still wait in the stream. The device
// buffer is one: copies and the kernels that read it are ordered by the stream. It keeps
// its address until an upload needs more room (device_generation() counts the moves).
class StagedUpload {
 public:
  StagedUpload() = default;
  ~StagedUpload() {
    for (cudaEvent_t& e : copied_)
      if (e != nullptr) cudaEventDestroy(e);
  }
  StagedUpload(const StagedUpload&) = delete;
  StagedUpload& operator=(const StagedUpload&) = delete;

  // Queues the copy of `pack` on `stream`; returns the device address of its offset 0.
  std::byte* upload(const ArrayPack& pack, cudaStream_t stream) {
    const std::size_t slot = next_;
    next_ = (next_ + 1) % kSlots;
    if (copied_[slot] == nullptr)
      CUDA_CHECK(cudaEventCreateWithFlags(&copied_[slot], cudaEventDisableTiming));
    else
      CUDA_CHECK(cudaEventSynchronize(copied_[slot]));  // the copy that last read this staging buffer ran
    std::byte* host = staging_[slot].reserve(pack.size());
    pack.copy_to(host);
    if (pack.size() > device_.bytes()) {
      CUDA_CHECK(cudaStreamSynchronize(stream));  // no queued kernel reads the old buffer any more
      device_ = DeviceBuffer(std::max(pack.size(), device_.bytes() * 2));
      ++device_generation_;
    }
    CUDA_CHECK(cudaMemcpyAsync(device_.data(), host, pack.size(), cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaEventRecord(copied_[slot], stream));
    return device_.as<std::byte>();
  }
  std::size_t device_bytes() const { return device_.bytes(); }
  uint64_t device_generation() const { return device_generation_; }

 private:
  static constexpr std::size_t kSlots = 4;  // uploads of the two steps in flight: block copies, step arrays
  PinnedBuffer staging_[kSlots];
  cudaEvent_t copied_[kSlots] = {};
  std::size_t next_ = 0;
  DeviceBuffer device_;
  uint64_t device_generation_ = 0;
};

}  // namespace pagedgen::gpu
