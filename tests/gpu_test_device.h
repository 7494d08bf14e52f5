// GPU test helpers: whether a CUDA device is present (GPU tests skip with a message when
// not, so they pass on machines without one), and vector copies to and from the device.
#pragma once

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cuda_check.h"
#include "device_buffer.h"

namespace pagedgen::test {

// Empty when a device is present, else why not (no driver, no device).
const std::string& gpu_absent_reason();

template <typename T>
gpu::DeviceBuffer to_device(const std::vector<T>& values) {
  gpu::DeviceBuffer buffer(values.size() * sizeof(T));
  if (!values.empty())
    CUDA_CHECK(cudaMemcpy(buffer.data(), values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice));
  return buffer;
}

template <typename T>
std::vector<T> to_host(const gpu::DeviceBuffer& buffer) {
  std::vector<T> values(buffer.bytes() / sizeof(T));
  CUDA_CHECK(cudaDeviceSynchronize());
  if (!values.empty()) CUDA_CHECK(cudaMemcpy(values.data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToHost));
  return values;
}

}  // namespace pagedgen::test

#define REQUIRE_GPU()                                                                     \
  if (!::pagedgen::test::gpu_absent_reason().empty()) {                                   \
    MESSAGE("skipped: no CUDA device (" << ::pagedgen::test::gpu_absent_reason() << ")"); \
    return;                                                                               \
  }
