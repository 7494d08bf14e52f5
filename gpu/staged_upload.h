// Host arrays to the device in one asynchronous copy: ArrayPack lays them out back to back
// (256-byte aligned), StagedUpload copies the pack through pinned host memory into a device
// buffer, both grown on demand. PinnedBuffer is the page-locked memory such copies (and the
// device sampler's results on the way back) go through: cudaMemcpyAsync from pageable
// memory would not be asynchronous.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
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

class ArrayPack {
 public:
  // Returns the array's byte offset in the pack.
  template <typename T>
  std::size_t add(std::span<const T> values) {
    const std::size_t offset = size_;
    parts_.push_back({values.data(), values.size_bytes(), offset});
    size_ = (offset + values.size_bytes() + 255) / 256 * 256;
    return offset;
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

class StagedUpload {
 public:
  // Queues the copy of `pack` on `stream`; returns the device address of its offset 0. The
  // pinned staging memory is reused by the next upload: synchronize `stream` before it.
  std::byte* upload(const ArrayPack& pack, cudaStream_t stream) {
    std::byte* host = staging_.reserve(pack.size());
    pack.copy_to(host);
    if (pack.size() > device_.bytes()) device_ = DeviceBuffer(std::max(pack.size(), device_.bytes() * 2));
    CUDA_CHECK(cudaMemcpyAsync(device_.data(), host, pack.size(), cudaMemcpyHostToDevice, stream));
    return device_.as<std::byte>();
  }
  std::size_t device_bytes() const { return device_.bytes(); }

 private:
  PinnedBuffer staging_;
  DeviceBuffer device_;
};

}  // namespace pagedgen::gpu
