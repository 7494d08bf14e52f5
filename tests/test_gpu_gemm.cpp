// CudaGemm (gpu/cuda_gemm.h) against a double-precision CPU product, per dtype, over decode
// bucket and prefill shapes: each shape planned once (its cached algorithm gives the same bits
// on every later call), every row within its float32-accumulation tolerance whatever m it is
// computed in, nothing written past y, and a shape first planned inside a stream capture.
// In float32 (pedantic, no input rounding: the mask that may leave a shape without an
// algorithm) every GEMM shape the backend runs: the decode buckets' small m, LM heads of
// vocabulary sizes even and odd, an odd k; a shape with no algorithm fails its check with
// cublasLt's answer and the others still run.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>

#include "cublaslt_library.h"
#include "cuda_gemm.h"
#include "gpu_test_device.h"
#include "util/error.h"
#include "util/half.h"

using namespace pagedgen;

namespace {

constexpr uint32_t kSentinelBits = 0x7fc0dead;
constexpr double kUnitRoundoff = 0x1p-24;  // float32
// Products the double-precision reference takes per problem before it checks only some
// columns (about 0.3 s of CPU).
constexpr int64_t kMaxReferenceProducts = int64_t{1} << 28;

struct Problem {
  int64_t rows, k, n;
  std::vector<int64_t> columns;  // the columns of y checked against the reference, ascending
  std::vector<float> x, w;       // (rows, k), (n, k): the values the device multiplies
  gpu::DeviceBuffer x_d, w_d;    // the same, in the dtype
  std::vector<double> ref;       // (rows, columns) the exact products, in double
  std::vector<double> abs;       // (rows, columns) sum over i of |x_i w_i|, for the error bounds
};

// Every column, or when that is too many products 61 spread over the row and the last 8
// (where a kernel handles the tail of an odd n).
std::vector<int64_t> checked_columns(int64_t rows, int64_t k, int64_t n) {
  std::vector<int64_t> columns;
  if (rows * k * n <= kMaxReferenceProducts) {
    for (int64_t c = 0; c < n; ++c) columns.push_back(c);
    return columns;
  }
  for (int64_t i = 0; i < 61; ++i) columns.push_back(i * (n - 8) / 61);
  for (int64_t c = n - 8; c < n; ++c) columns.push_back(c);
  return columns;
}

// Uniform in [-1, 1): float32 values use all 24 bits, so a GEMM that rounds its inputs to
// TF32 would show it; for bf16/fp16 they are rounded first, and the reference uses them.
Problem make_problem(gpu::DeviceDtype dtype, int64_t rows, int64_t k, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Problem p{rows,
            k,
            n,
            checked_columns(rows, k, n),
            std::vector<float>(static_cast<std::size_t>(rows * k)),
            std::vector<float>(static_cast<std::size_t>(n * k)),
            {},
            {},
            {},
            {}};
  auto upload = [&](std::vector<float>& values) {
    for (float& v : values) v = dist(rng);
    if (dtype == gpu::DeviceDtype::F32) return test::to_device(values);
    std::vector<uint16_t> bits(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (dtype == gpu::DeviceDtype::BF16) {
        bits[i] = float_to_bfloat16(values[i]);
        values[i] = bfloat16_to_float(bits[i]);
      } else {
        bits[i] = float_to_half(values[i]);
        values[i] = half_to_float(bits[i]);
      }
    }
    return test::to_device(bits);
  };
  p.x_d = upload(p.x);
  p.w_d = upload(p.w);
  const auto num_columns = static_cast<int64_t>(p.columns.size());
  p.ref.resize(static_cast<std::size_t>(rows * num_columns));
  p.abs.resize(p.ref.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < num_columns; ++j) {
      const int64_t c = p.columns[static_cast<std::size_t>(j)];
      double sum = 0.0, abs_sum = 0.0;
      for (int64_t i = 0; i < k; ++i) {
        const double product = static_cast<double>(p.x[static_cast<std::size_t>(r * k + i)]) *
                               static_cast<double>(p.w[static_cast<std::size_t>(c * k + i)]);
        sum += product;
        abs_sum += std::abs(product);
      }
      p.ref[static_cast<std::size_t>(r * num_columns + j)] = sum;
      p.abs[static_cast<std::size_t>(r * num_columns + j)] = abs_sum;
    }
  return p;
}

// The error bound of element (r, c) relative to sum |x_i w_i|. The products are exact in
// float32 for every dtype here (bf16 x bf16 and fp16 x fp16 need at most 22 bits), so only
// the float32 accumulation errs:
// - float32 (IEEE round to nearest, any summation order): Higham and Mary's probabilistic
//   bound lambda sqrt(k) u with lambda = 8 (fails with probability under 1e-13 per element).
//   Simulated on the CPU for these shapes (64 rows): sequential float32 sums stay under
//   0.02 of it, TF32-rounded inputs reach 5.9x (k 576) and 2.2x (k 1536), so TF32 fails;
// - bf16/fp16 on tensor cores, whose accumulation may truncate (2u per addition): the
//   deterministic bound 2 k u, valid for any order and rounding direction.
double relative_bound(gpu::DeviceDtype dtype, int64_t k) {
  if (dtype == gpu::DeviceDtype::F32) return 8.0 * std::sqrt(static_cast<double>(k)) * kUnitRoundoff;
  return 2.0 * static_cast<double>(k) * kUnitRoundoff;
}

// y (m, n) from the first m rows of the problem's x, into a buffer one sentinel row longer.
std::vector<float> run_gemm(gpu::CudaGemm& gemm, const Problem& p, int64_t m) {
  REQUIRE(m <= p.rows);
  const auto num_values = static_cast<std::size_t>((m + 1) * p.n);
  const gpu::DeviceBuffer y = test::to_device(std::vector<uint32_t>(num_values, kSentinelBits));
  gemm.run(p.x_d.data(), p.w_d.data(), y.as<float>(), m, p.k, p.n);
  std::vector<float> got = test::to_host<float>(y);
  for (std::size_t i = static_cast<std::size_t>(m * p.n); i < got.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &got[i], sizeof(bits));
    REQUIRE(bits == kSentinelBits);
  }
  got.resize(static_cast<std::size_t>(m * p.n));
  return got;
}

// The worst |y - ref| / (bound * sum |x_i w_i|) over y's checked elements: at most 1 passes.
double worst_error_ratio(const std::vector<float>& y, const Problem& p, double bound) {
  const auto num_columns = p.columns.size();
  const std::size_t m = y.size() / static_cast<std::size_t>(p.n);
  double worst = 0.0;
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t j = 0; j < num_columns; ++j) {
      const double got = y[r * static_cast<std::size_t>(p.n) + static_cast<std::size_t>(p.columns[j])];
      const std::size_t at = r * num_columns + j;
      const double ratio = std::abs(got - p.ref[at]) / (bound * p.abs[at]);
      worst = std::isnan(ratio) ? INFINITY : std::max(worst, ratio);
    }
  return worst;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// y (m, k, n) once, and again from the cached plan: the same bits; each row within
// tolerance. A shape cublasLt has no algorithm for fails the check with its message.
std::optional<std::vector<float>> check_shape(gpu::CudaGemm& gemm, const Problem& p, int64_t m,
                                              gpu::DeviceDtype dtype) {
  CAPTURE(m);
  std::vector<float> first;
  try {
    first = run_gemm(gemm, p, m);
  } catch (const Error& e) {
    FAIL_CHECK(e.what());
    return std::nullopt;
  }
  const std::size_t num_shapes = gemm.num_cached_shapes();
  CHECK(same_bits(first, run_gemm(gemm, p, m)));
  CHECK(gemm.num_cached_shapes() == num_shapes);
  // The reference rows are the same for every m: row r is right in each batch.
  const double worst = worst_error_ratio(first, p, relative_bound(dtype, p.k));
  CHECK_MESSAGE(worst <= 1.0, "worst error / bound " << worst);
  return first;
}

}  // namespace

// Runs without a GPU: the library is a file, its functions are looked up by name. First in
// this file, before any GEMM has loaded it.
TEST_CASE("cuBLASLt is loaded on first use, by name, with every function the backend calls") {
  CHECK_FALSE(gpu::cublaslt_loaded());
  const gpu::CublasLt& lt = gpu::cublaslt();
  CHECK(gpu::cublaslt_loaded());
  CHECK(gpu::cublaslt_library_name() == fmt::format("libcublasLt.so.{}", CUBLAS_VER_MAJOR));
  for (const void* function :
       {reinterpret_cast<const void*>(lt.create), reinterpret_cast<const void*>(lt.destroy),
        reinterpret_cast<const void*>(lt.status_name), reinterpret_cast<const void*>(lt.status_string),
        reinterpret_cast<const void*>(lt.matmul), reinterpret_cast<const void*>(lt.algo_get_heuristic),
        reinterpret_cast<const void*>(lt.desc_create), reinterpret_cast<const void*>(lt.desc_destroy),
        reinterpret_cast<const void*>(lt.desc_set_attribute), reinterpret_cast<const void*>(lt.preference_create),
        reinterpret_cast<const void*>(lt.preference_destroy),
        reinterpret_cast<const void*>(lt.preference_set_attribute), reinterpret_cast<const void*>(lt.layout_create),
        reinterpret_cast<const void*>(lt.layout_destroy)}) {
    CHECK(function != nullptr);
  }
  CHECK(std::string(lt.status_name(CUBLAS_STATUS_NOT_SUPPORTED)) == "CUBLAS_STATUS_NOT_SUPPORTED");
}

TEST_CASE("CudaGemm: each shape's cached algorithm, every row within tolerance at every m") {
  REQUIRE_GPU();
  const std::vector<int64_t> ms = {1, 2, 8, 37, 256};  // decode buckets 1, 2, 8; prefill 37, 256
  const std::vector<std::pair<int64_t, int64_t>> kns = {{576, 1536}, {1536, 576}};
  for (const gpu::DeviceDtype dtype : {gpu::DeviceDtype::F32, gpu::DeviceDtype::BF16, gpu::DeviceDtype::F16}) {
    CAPTURE(gpu::device_dtype_name(dtype));
    gpu::CudaGemm gemm(nullptr, dtype);
    for (const auto& [k, n] : kns) {
      CAPTURE(k);
      CAPTURE(n);
      const Problem p = make_problem(dtype, ms.back(), k, n, static_cast<uint32_t>(k * 7 + n));
      std::vector<std::vector<float>> results;
      for (const int64_t m : ms)
        if (const std::optional<std::vector<float>> y = check_shape(gemm, p, m, dtype)) results.push_back(*y);
      REQUIRE(results.size() == ms.size());
      // Not asserted (another m may take another algorithm): how batch-variant these are.
      const std::vector<float>& widest = results.back();
      for (std::size_t i = 0; i + 1 < ms.size(); ++i) {
        const auto count = static_cast<std::size_t>(ms[i] * n);
        const bool equal = std::memcmp(results[i].data(), widest.data(), count * sizeof(float)) == 0;
        MESSAGE("m " << ms[i] << " rows " << (equal ? "equal" : "differ from") << " the same rows at m " << ms.back()
                     << ", bit for bit");
      }
    }
    CHECK(gemm.num_cached_shapes() == ms.size() * kns.size());
  }
}

TEST_CASE("CudaGemm float32: an algorithm for every shape the backend runs, small m and odd n, each within tolerance") {
  REQUIRE_GPU();
  // The decode buckets 1 to 32 and 256, and prefill token counts 3 and 37.
  const std::vector<int64_t> ms = {1, 2, 3, 4, 8, 16, 24, 32, 37, 256};
  // (k, n): SmolLM2-135M's fused QKV, wo, fused gate/up, w_down and LM head (vocabulary
  // 49152); the LM head of an odd vocabulary (49153, and 32001: Llama 2's with a pad token);
  // an odd n and an odd k of small sizes; Llama-3-8B's fused QKV and w_down.
  const std::vector<std::pair<int64_t, int64_t>> kns = {{576, 960},   {576, 576},   {576, 3072},  {1536, 576},
                                                        {576, 49152}, {576, 49153}, {576, 32001}, {256, 1001},
                                                        {1001, 256},  {4096, 6144}, {14336, 4096}};
  gpu::CudaGemm gemm(nullptr, gpu::DeviceDtype::F32);
  int num_failed = 0;
  for (const auto& [k, n] : kns) {
    CAPTURE(k);
    CAPTURE(n);
    const Problem p = make_problem(gpu::DeviceDtype::F32, ms.back(), k, n, static_cast<uint32_t>(k * 3 + n));
    for (const int64_t m : ms) num_failed += !check_shape(gemm, p, m, gpu::DeviceDtype::F32).has_value();
  }
  MESSAGE(num_failed << " of " << ms.size() * kns.size() << " float32 shapes have no algorithm");
}

TEST_CASE("CudaGemm: a shape first planned inside a stream capture replays the eager bits") {
  REQUIRE_GPU();
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // float32 through its masked heuristic too, on a decode bucket's LM head of an odd vocabulary.
  for (const auto& [dtype, n] :
       {std::pair{gpu::DeviceDtype::BF16, int64_t{1536}}, std::pair{gpu::DeviceDtype::F32, int64_t{1536}},
        std::pair{gpu::DeviceDtype::F32, int64_t{49153}}}) {
    CAPTURE(gpu::device_dtype_name(dtype));
    CAPTURE(n);
    constexpr int64_t m = 24;
    const Problem p = make_problem(dtype, m, 576, n, 11);
    const gpu::DeviceBuffer y_graph(static_cast<std::size_t>(m * p.n) * sizeof(float));
    gpu::CudaGemm gemm(stream, dtype);
    // Thread-local capture, as DecodeGraphs does: an allocation or a synchronisation inside
    // run() would fail the capture.
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    cudaGraph_t graph = nullptr;
    try {
      gemm.run(p.x_d.data(), p.w_d.data(), y_graph.as<float>(), m, p.k, p.n);
    } catch (const Error& e) {
      cudaStreamEndCapture(stream, &graph);
      if (graph != nullptr) cudaGraphDestroy(graph);
      FAIL_CHECK(e.what());
      continue;
    }
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    CHECK(gemm.num_cached_shapes() == 1);
    cudaGraphExec_t exec = nullptr;
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_CHECK(cudaGraphLaunch(exec, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
    const std::vector<float> from_graph = test::to_host<float>(y_graph);
    const std::vector<float> eager = run_gemm(gemm, p, m);
    CHECK(gemm.num_cached_shapes() == 1);
    CHECK(same_bits(from_graph, eager));
    CHECK(worst_error_ratio(eager, p, relative_bound(dtype, p.k)) <= 1.0);
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST_CASE("CudaGemm: a misaligned operand is refused before anything runs") {
  REQUIRE_GPU();
  const Problem p = make_problem(gpu::DeviceDtype::BF16, 1, 576, 1536, 5);
  const gpu::DeviceBuffer y(static_cast<std::size_t>(p.n) * sizeof(float));
  gpu::CudaGemm gemm(nullptr, gpu::DeviceDtype::BF16);
  const auto* x_shifted = p.x_d.as<const uint16_t>() + 1;  // 2 bytes in
  CHECK_THROWS_AS(gemm.run(x_shifted, p.w_d.data(), y.as<float>(), 1, p.k, p.n), Error);
  CHECK(gemm.num_cached_shapes() == 0);
}
