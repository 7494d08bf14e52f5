// The one dispatch from a DeviceDtype to the C++ storage type (float, __half,
// __nv_bfloat16) that kernels are instantiated for (STYLE.md habit 7: templates only at
// the kernel edge). Host code; the CUDA half-precision headers compile with any C++ compiler.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <utility>

#include "device_dtype.h"

namespace pagedgen::gpu {

template <typename T>
struct TypeTag {
  using type = T;
};

// fn(TypeTag<T>{}) with T the storage type of `dtype`.
template <typename Fn>
decltype(auto) dispatch_dtype(DeviceDtype dtype, Fn&& fn) {
  switch (dtype) {
    case DeviceDtype::F16:
      return std::forward<Fn>(fn)(TypeTag<__half>{});
    case DeviceDtype::BF16:
      return std::forward<Fn>(fn)(TypeTag<__nv_bfloat16>{});
    case DeviceDtype::F32:
      break;
  }
  return std::forward<Fn>(fn)(TypeTag<float>{});
}

}  // namespace pagedgen::gpu
