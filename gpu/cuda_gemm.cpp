#include "cuda_gemm.h"

#include <fmt/format.h>

#include "cublaslt_library.h"
#include "cuda_check.h"
#include "util/error.h"

namespace pagedgen::gpu {

namespace {

// cublasLt's workspace (split-K partials, reduction counters), owned here so that the memory
// report counts it; 32 MiB is what cuBLAS recommends for Hopper.
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

// Decode steps bring one shape per (bucket, GEMM), prefill steps one per token count: past
// this many, the cache starts again. Nothing is lost but heuristic queries: a shape planned
// again gets the same algorithm (the heuristic's answer depends on the shape alone).
constexpr std::size_t kMaxCachedShapes = 4096;

// The heuristic's default: it only returns algorithms for A, B, C, D aligned at least so.
constexpr uintptr_t kAlignmentBytes = 256;

// float32 inputs must never be rounded on the way in (TF32, or the bf16/fp16 splits of the
// emulated paths): the pedantic compute type asks for standard float arithmetic, and this
// mask drops any algorithm whose numerical flags say it converts its inputs all the same.
constexpr uint64_t kFloat32ImplMask =
    ~(CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_TF32 | CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16F |
      CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16BF);

cudaDataType_t cuda_data_type(DeviceDtype dtype) {
  switch (dtype) {
    case DeviceDtype::F16:
      return CUDA_R_16F;
    case DeviceDtype::BF16:
      return CUDA_R_16BF;
    case DeviceDtype::F32:
      break;
  }
  return CUDA_R_32F;
}

cublasComputeType_t compute_type(DeviceDtype dtype) {
  return dtype == DeviceDtype::F32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
}

bool is_aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kAlignmentBytes == 0; }

// The heuristic's search preference: the workspace, and for float32 the implementation mask.
cublasLtMatmulPreference_t make_preference(std::size_t workspace_bytes, bool float32_mask) {
  cublasLtMatmulPreference_t preference = nullptr;
  CUBLAS_CHECK(cublaslt().preference_create(&preference));
  const uint64_t workspace_size = workspace_bytes;
  CUBLAS_CHECK(cublaslt().preference_set_attribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &workspace_size, sizeof(workspace_size)));
  if (float32_mask)
    CUBLAS_CHECK(cublaslt().preference_set_attribute(preference, CUBLASLT_MATMUL_PREF_IMPL_MASK, &kFloat32ImplMask,
                                                     sizeof(kFloat32ImplMask)));
  return preference;
}

}  // namespace

// Row-major y = x w^T is column-major y^T (n, m) = w^T (n, k) . x^T (k, m): cublasLt sees w
// as a (k, n) column-major matrix to transpose (A) and x as (k, m) as it is (B); y is C and
// D, (n, m) column-major.
struct CudaGemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t w_layout = nullptr;
  cublasLtMatrixLayout_t x_layout = nullptr;
  cublasLtMatrixLayout_t y_layout = nullptr;
  cublasLtMatmulAlgo_t algo{};

  Plan() = default;
  ~Plan() {
    if (y_layout != nullptr) cublaslt().layout_destroy(y_layout);
    if (x_layout != nullptr) cublaslt().layout_destroy(x_layout);
    if (w_layout != nullptr) cublaslt().layout_destroy(w_layout);
    if (desc != nullptr) cublaslt().desc_destroy(desc);
  }
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
};

CudaGemm::CudaGemm(cudaStream_t stream, DeviceDtype dtype)
    : stream_(stream), dtype_(dtype), workspace_(kWorkspaceBytes) {
  CUBLAS_CHECK(cublaslt().create(&handle_));
  preference_ = make_preference(workspace_.bytes(), dtype == DeviceDtype::F32);
}

CudaGemm::~CudaGemm() {
  plans_.clear();  // the descriptors before the handle they were made for
  if (preference_ != nullptr) cublaslt().preference_destroy(preference_);
  if (handle_ != nullptr) cublaslt().destroy(handle_);
}

// Host-side only (descriptor objects and the heuristic query): safe inside a stream capture.
const CudaGemm::Plan& CudaGemm::plan(const Shape& shape) {
  if (const auto it = plans_.find(shape); it != plans_.end()) return *it->second;
  const auto [m, k, n] = shape;
  auto p = std::make_unique<Plan>();
  const cudaDataType_t type = cuda_data_type(dtype_);
  CUBLAS_CHECK(cublaslt().desc_create(&p->desc, compute_type(dtype_), CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T;
  CUBLAS_CHECK(cublaslt().desc_set_attribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)));
  CUBLAS_CHECK(cublaslt().layout_create(&p->w_layout, type, static_cast<uint64_t>(k), static_cast<uint64_t>(n), k));
  CUBLAS_CHECK(cublaslt().layout_create(&p->x_layout, type, static_cast<uint64_t>(k), static_cast<uint64_t>(m), k));
  CUBLAS_CHECK(
      cublaslt().layout_create(&p->y_layout, CUDA_R_32F, static_cast<uint64_t>(n), static_cast<uint64_t>(m), n));
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  const std::optional<cublasLtMatmulAlgo_t> algo = heuristic_algorithm(*p, preference_, status);
  if (!algo) throw Error(no_algorithm_message(shape, *p, status));
  p->algo = *algo;
  if (plans_.size() >= kMaxCachedShapes) plans_.clear();
  return *plans_.emplace(shape, std::move(p)).first->second;
}

std::optional<cublasLtMatmulAlgo_t> CudaGemm::heuristic_algorithm(const Plan& p, cublasLtMatmulPreference_t preference,
                                                                  cublasStatus_t& status) const {
  cublasLtMatmulHeuristicResult_t result{};
  int num_results = 0;
  status = cublaslt().algo_get_heuristic(handle_, p.desc, p.w_layout, p.x_layout, p.y_layout, p.y_layout, preference, 1,
                                         &result, &num_results);
  if (status != CUBLAS_STATUS_SUCCESS || num_results == 0 || result.state != CUBLAS_STATUS_SUCCESS) return std::nullopt;
  return result.algo;
}

// No float32 fallback is taken: an algorithm the implementation mask drops is, by its own
// numerical flags, one that rounds float32 inputs to TF32 or 16 bits, which would break the
// float32 path's promise (CPU-comparable results). The message says which case it is: no
// algorithm at all for the shape, or only input-rounding ones (asked again without the mask).
std::string CudaGemm::no_algorithm_message(const Shape& shape, const Plan& p, cublasStatus_t status) const {
  const auto [m, k, n] = shape;
  std::string why = status == CUBLAS_STATUS_SUCCESS ? "no result" : cublaslt().status_name(status);
  if (dtype_ == DeviceDtype::F32) {
    const cublasLtMatmulPreference_t unmasked = make_preference(workspace_.bytes(), false);
    cublasStatus_t unmasked_status = CUBLAS_STATUS_SUCCESS;
    const bool rounding_only = heuristic_algorithm(p, unmasked, unmasked_status).has_value();
    cublaslt().preference_destroy(unmasked);
    why += rounding_only ? "; it has one that rounds float32 inputs to TF32 or 16 bits, which float32 runs refuse"
                         : "; nor one that rounds float32 inputs";
  }
  return fmt::format(
      "cublasLt has no GEMM algorithm for y ({}, {}) = x ({}, {}) @ w ({}, {})^T in {} within a {} MiB "
      "workspace ({}); run this model in another --dtype, or on the CPU, and please report the shape",
      m, n, m, k, n, k, device_dtype_name(dtype_), workspace_.bytes() >> 20, why);
}

void CudaGemm::run(const void* x, const void* w, float* y, int64_t m, int64_t k, int64_t n) {
  if (m == 0) return;
  if (!is_aligned(x) || !is_aligned(w) || !is_aligned(y))
    throw Error(fmt::format("CudaGemm::run: x {}, w {} and y {} must be {}-byte aligned (shape m {}, k {}, n {})", x, w,
                            static_cast<const void*>(y), kAlignmentBytes, m, k, n));
  const Plan& p = plan(Shape{m, k, n});
  const float alpha = 1.0f;
  const float beta = 0.0f;
  CUBLAS_CHECK(cublaslt().matmul(handle_, p.desc, &alpha, w, p.w_layout, x, p.x_layout, &beta, y, p.y_layout, y,
                                 p.y_layout, &p.algo, workspace_.data(), workspace_.bytes(), stream_));
}

}  // namespace pagedgen::gpu
