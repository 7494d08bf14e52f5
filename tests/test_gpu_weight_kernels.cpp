// The weight upload on the device: launch_dequantize against its CPU reference
// (convert_chunk) for every type dequantize() reads and every dtype, bit for bit; and
// DeviceWeights::upload, which streams a model file's tensors chunk by chunk, against the
// same plan run on the host, on Phi-3 files (fused tensors split into views; F32 and Q8_0)
// and the default model when installed. Skips without a GPU.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "device_weights.h"
#include "dtype_dispatch.h"
#include "gpu_test_device.h"
#include "host_weight_upload.h"
#include "loader/model_files.h"
#include "model/tensor_chunks.h"
#include "weight_upload_plan.h"
#include "random_blocks.h"
#include "test_paths.h"
#include "weight_kernels.h"

using namespace pagedgen;

namespace {

constexpr gpu::DeviceDtype kDtypes[] = {gpu::DeviceDtype::F32, gpu::DeviceDtype::F16, gpu::DeviceDtype::BF16};

std::vector<std::byte> device_bytes(const void* device, std::size_t bytes) {
  std::vector<std::byte> host(bytes);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost));
  return host;
}

void check_upload(const ModelFiles& files) {
  for (const gpu::DeviceDtype dtype : kDtypes) {
    CAPTURE(gpu::device_dtype_name(dtype));
    const ModelConfig& c = files.config();
    const gpu::DeviceWeights w = gpu::DeviceWeights::upload(c, files.tensors(), files.path().string(), dtype, nullptr);
    const DeviceWeightLayout layout(c, gpu::weight_dtype(dtype));
    REQUIRE(w.bytes() == layout.bytes());
    const WeightUploadPlan plan(c, layout, files.tensors(), files.path().string(), std::size_t{64} << 20);
    const test::HostWeightBuffers expected = test::run_plan_on_host(plan, layout);
    // Both buffers start with a tensor: token_embd (typed), output_norm (float32).
    REQUIRE(layout.at("token_embd.weight").offset == 0);
    REQUIRE(layout.at("output_norm.weight").offset == 0);
    const std::vector<std::byte> typed = device_bytes(w.token_embd, layout.typed_bytes());
    const std::vector<std::byte> float32 = device_bytes(w.output_norm, layout.float32_bytes());
    for (const WeightPlacement& p : layout.placements()) {
      CAPTURE(p.name);
      const std::size_t element_bytes = p.typed ? weight_dtype_bytes(layout.dtype()) : sizeof(float);
      const std::vector<std::byte>& got = p.typed ? typed : float32;
      const std::vector<std::byte>& want = p.typed ? expected.typed : expected.float32;
      REQUIRE(std::memcmp(got.data() + p.offset * element_bytes, want.data() + p.offset * element_bytes,
                          p.num_elements * element_bytes) == 0);
    }
  }
}

}  // namespace

TEST_CASE("launch_dequantize equals convert_chunk for every type and dtype, bit for bit") {
  REQUIRE_GPU();
  for (const GgmlType type : test::kConvertibleTypes) {
    const GgmlTypeLayout layout = *ggml_type_layout(static_cast<uint32_t>(type));
    // An odd number of blocks: 100,003 plain values, 1,001 blocks of 32, 77 of 256.
    const std::size_t num_blocks = layout.block_elements == 1 ? 100003 : layout.block_elements == 32 ? 1001 : 77;
    const std::size_t n = num_blocks * layout.block_elements;
    const std::vector<std::byte> stored = test::random_blocks(type, num_blocks, 3 + static_cast<uint32_t>(type));
    const gpu::DeviceBuffer src = test::to_device(stored);
    for (const gpu::DeviceDtype dtype : kDtypes) {
      CAPTURE(ggml_type_name(type));
      CAPTURE(gpu::device_dtype_name(dtype));
      const std::size_t element_bytes = gpu::device_dtype_bytes(dtype);
      std::vector<std::byte> expected(n * element_bytes);
      convert_chunk(type, stored, gpu::weight_dtype(dtype), expected);
      gpu::DeviceBuffer dst(n * element_bytes);
      CUDA_CHECK(cudaMemset(dst.data(), 0xA5, dst.bytes()));
      gpu::dispatch_dtype(dtype, [&]<typename T>(gpu::TypeTag<T>) {
        gpu::launch_dequantize(type, src.as<std::byte>(), static_cast<int64_t>(n), dst.as<T>(), nullptr);
      });
      REQUIRE(test::to_host<std::byte>(dst) == expected);
    }
  }
}

TEST_CASE("DeviceWeights::upload: Phi-3 F32 file, fused tensors split") {
  REQUIRE_GPU();
  check_upload(ModelFiles(test::data_dir() / "arch-reference" / "phi3" / "model.gguf"));
}

TEST_CASE("DeviceWeights::upload: Phi-3 Q8_0 file, dequantized on the device") {
  REQUIRE_GPU();
  check_upload(ModelFiles(test::data_dir() / "arch-reference" / "phi3" / "q8_0" / "model.gguf"));
}

TEST_CASE("DeviceWeights::upload: the default model") {
  REQUIRE_GPU();
  const std::optional<std::filesystem::path> path = test::default_model();
  if (!path) {
    MESSAGE("skipped: the default model is not installed (scripts/fetch-model.sh)");
    return;
  }
  check_upload(ModelFiles(*path));
}
