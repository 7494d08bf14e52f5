// The CUDA token-wise kernels (gpu/llama_kernels.h) and the weight fills against their CPU
// references (core/cpu/cpu_ops.h, model/dummy_weights.h), in float32, with sentinel
// rows past every output to catch stray writes: the Llama block's and what Qwen3 and Gemma
// add (q/k norms, post norms, the embedding scale, GeGLU, the logits' soft-cap); the same
// kernels reading or writing float16 and bfloat16 (tables, normed rows, activations, the
// KV write); and the fused gate/up + activation kernel (gpu/fused_mlp_kernel.h) in
// bfloat16 and float16.
#include <doctest/doctest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "cpu/cpu_ops.h"
#include "cuda_gemm.h"
#include "fused_mlp_kernel.h"
#include "fused_mlp_plan.h"
#include "gpu_test_device.h"
#include "kv_cache_kernels.h"
#include "llama_kernels.h"
#include "model/dummy_weights.h"
#include "model/model_weights.h"
#include "util/error.h"
#include "util/half.h"
#include "weight_kernels.h"

using namespace pagedgen;

namespace {

constexpr uint32_t kSentinelBits = 0x7fc0dead;

std::vector<float> random_values(std::size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// An output buffer of `n` floats plus `extra` sentinel floats.
gpu::DeviceBuffer poisoned(std::size_t n, std::size_t extra) {
  return test::to_device(std::vector<uint32_t>(n + extra, kSentinelBits));
}

// Checks the first n values against `expected` within a relative tolerance and the rest
// against the sentinel.
void check_output(const gpu::DeviceBuffer& buffer, const std::vector<float>& expected, float relative_tolerance) {
  const std::vector<float> got = test::to_host<float>(buffer);
  REQUIRE(got.size() >= expected.size());
  float worst = 0.0f;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const float diff = std::abs(got[i] - expected[i]) / std::max(1.0f, std::abs(expected[i]));
    worst = std::isnan(diff) ? INFINITY : std::max(worst, diff);
  }
  CHECK(worst <= relative_tolerance);
  for (std::size_t i = expected.size(); i < got.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &got[i], 4);
    REQUIRE(bits == kSentinelBits);
  }
}

}  // namespace

TEST_CASE("embedding gather: the table rows, exactly") {
  REQUIRE_GPU();
  const int32_t vocab = 50, hidden = 72;
  const std::vector<float> table = random_values(vocab * hidden, 1);
  const std::vector<int32_t> ids = {3, 49, 0, 3, 17};
  std::vector<float> expected(ids.size() * hidden);
  cpu::embedding_gather(table.data(), ids, expected.data(), hidden);
  const gpu::DeviceBuffer table_d = test::to_device(table), ids_d = test::to_device(ids);
  const gpu::DeviceBuffer out = poisoned(expected.size(), 2 * hidden);
  gpu::launch_embedding_gather(gpu::EmbeddingArgs<float>{table_d.as<float>(), ids_d.as<int32_t>(), out.as<float>(),
                                                         static_cast<int32_t>(ids.size()), hidden},
                               nullptr);
  check_output(out, expected, 0.0f);

  // Gemma's scale: cpu::scale_in_place after the gather, one rounding on both sides.
  const float scale = std::sqrt(static_cast<float>(hidden));
  cpu::scale_in_place(expected.data(), expected.size(), scale);
  const gpu::DeviceBuffer scaled = poisoned(expected.size(), 2 * hidden);
  gpu::launch_embedding_gather(gpu::EmbeddingArgs<float>{table_d.as<float>(), ids_d.as<int32_t>(), scaled.as<float>(),
                                                         static_cast<int32_t>(ids.size()), hidden, scale},
                               nullptr);
  check_output(scaled, expected, 0.0f);
}

TEST_CASE("add + RMSNorm: the residual add and cpu::rms_norm, on all rows and on a row subset") {
  REQUIRE_GPU();
  // Sum of squares in double on both sides: float32 results agree to the last bits.
  constexpr float kTolerance = 1e-6f;
  for (int32_t dim : {64, 576, 4096}) {
    CAPTURE(dim);
    const int32_t rows = 5;
    const std::vector<float> x = random_values(rows * dim, 2, 3.0f);
    const std::vector<float> residual = random_values(rows * dim, 3);
    const std::vector<float> weight = random_values(dim, 4);
    std::vector<float> summed = x;
    for (std::size_t i = 0; i < summed.size(); ++i) summed[i] += residual[i];
    std::vector<float> expected(summed.size());
    cpu::rms_norm(summed.data(), weight.data(), expected.data(), rows, dim, 1e-5f);

    const gpu::DeviceBuffer x_d = test::to_device(x), residual_d = test::to_device(residual);
    const gpu::DeviceBuffer weight_d = test::to_device(weight);
    const gpu::DeviceBuffer out = poisoned(expected.size(), dim);
    gpu::launch_add_rms_norm(gpu::RmsNormArgs<float>{x_d.as<float>(), residual_d.as<float>(), weight_d.as<float>(),
                                                     out.as<float>(), nullptr, rows, dim, 1e-5f},
                             nullptr);
    check_output(out, expected, kTolerance);
    check_output(x_d, summed, 0.0f);  // the residual stream moved on

    // Rows 4 and 1 only (the logits rows), on the summed stream, no residual.
    const std::vector<int32_t> pick = {4, 1};
    const gpu::DeviceBuffer pick_d = test::to_device(pick);
    const gpu::DeviceBuffer picked = poisoned(2 * static_cast<std::size_t>(dim), dim);
    gpu::launch_add_rms_norm(gpu::RmsNormArgs<float>{x_d.as<float>(), nullptr, weight_d.as<float>(), picked.as<float>(),
                                                     pick_d.as<int32_t>(), 2, dim, 1e-5f},
                             nullptr);
    std::vector<float> expected_picked(expected.begin() + 4 * dim, expected.begin() + 5 * dim);
    expected_picked.insert(expected_picked.end(), expected.begin() + dim, expected.begin() + 2 * dim);
    check_output(picked, expected_picked, kTolerance);

    // A post-normed residual (Gemma): x += cpu::rms_norm(residual, post), then the norm.
    const std::vector<float> post = random_values(dim, 8);
    std::vector<float> normed_residual(residual.size());
    cpu::rms_norm(residual.data(), post.data(), normed_residual.data(), rows, dim, 1e-5f);
    std::vector<float> post_summed = x;
    for (std::size_t i = 0; i < post_summed.size(); ++i) post_summed[i] += normed_residual[i];
    std::vector<float> post_expected(post_summed.size());
    cpu::rms_norm(post_summed.data(), weight.data(), post_expected.data(), rows, dim, 1e-5f);
    const gpu::DeviceBuffer x2_d = test::to_device(x), post_d = test::to_device(post);
    const gpu::DeviceBuffer post_out = poisoned(expected.size(), dim);
    gpu::launch_add_rms_norm(
        gpu::RmsNormArgs<float>{x2_d.as<float>(), residual_d.as<float>(), weight_d.as<float>(), post_out.as<float>(),
                                nullptr, rows, dim, 1e-5f, post_d.as<float>()},
        nullptr);
    check_output(post_out, post_expected, kTolerance);
    check_output(x2_d, post_summed, kTolerance);
  }
}

TEST_CASE(
    "QKV bias + q/k norms + RoPE: cpu::add_bias, cpu::rms_norm per head, cpu::rope, both pair layouts, partial "
    "rotation; the KV write folded in") {
  REQUIRE_GPU();
  // Angles in double and unfused products on both sides; sin/cos may round differently in
  // the last bit of a double, hence a tolerance of a few float ulps.
  constexpr float kTolerance = 1e-6f;
  struct Case {
    int32_t heads, kv_heads, head_dim, rope_dim;
    RopeLayout layout;
    bool bias;
    bool qk_norm = false;  // Qwen3, Gemma 3: each q and k head RMS-normed before RoPE
  };
  for (const Case c :
       {Case{9, 3, 64, 64, RopeLayout::Interleaved, false}, Case{4, 2, 128, 128, RopeLayout::HalfSplit, true},
        Case{2, 1, 64, 32, RopeLayout::HalfSplit, false}, Case{2, 2, 64, 48, RopeLayout::Interleaved, true},
        Case{8, 2, 128, 128, RopeLayout::HalfSplit, false, true},
        Case{4, 1, 256, 256, RopeLayout::HalfSplit, true, true}}) {
    CAPTURE(c.head_dim);
    CAPTURE(c.rope_dim);
    CAPTURE(c.qk_norm);
    const int32_t tokens = 6, q_dim = c.heads * c.head_dim, kv_dim = c.kv_heads * c.head_dim;
    const int32_t width = q_dim + 2 * kv_dim;
    const std::vector<float> qkv = random_values(static_cast<std::size_t>(tokens * width), 5);
    const std::vector<float> bias = random_values(static_cast<std::size_t>(width), 6, 0.1f);
    const std::vector<int32_t> positions = {0, 1, 7, 300, 4095, 8191};
    ModelConfig config;
    config.rope_theta = 500000.0f;
    config.rope_dim = c.rope_dim;
    const std::vector<float> inv_freq = rope_inverse_frequencies(config, nullptr);

    std::vector<float> q(static_cast<std::size_t>(tokens * q_dim)), k(static_cast<std::size_t>(tokens * kv_dim)),
        v(static_cast<std::size_t>(tokens * kv_dim));
    for (int32_t t = 0; t < tokens; ++t)
      for (int32_t i = 0; i < width; ++i) {
        const float value = qkv[static_cast<std::size_t>(t * width + i)];
        if (i < q_dim)
          q[static_cast<std::size_t>(t * q_dim + i)] = value;
        else if (i < q_dim + kv_dim)
          k[static_cast<std::size_t>(t * kv_dim + i - q_dim)] = value;
        else
          v[static_cast<std::size_t>(t * kv_dim + i - q_dim - kv_dim)] = value;
      }
    if (c.bias) {
      cpu::add_bias(q.data(), bias.data(), tokens, q_dim);
      cpu::add_bias(k.data(), bias.data() + q_dim, tokens, kv_dim);
      cpu::add_bias(v.data(), bias.data() + q_dim + kv_dim, tokens, kv_dim);
    }
    const std::vector<float> q_norm = random_values(static_cast<std::size_t>(c.head_dim), 9);
    const std::vector<float> k_norm = random_values(static_cast<std::size_t>(c.head_dim), 10);
    constexpr float kEps = 1e-6f;
    if (c.qk_norm) {
      cpu::rms_norm(q.data(), q_norm.data(), q.data(), static_cast<std::size_t>(tokens * c.heads), c.head_dim, kEps);
      cpu::rms_norm(k.data(), k_norm.data(), k.data(), static_cast<std::size_t>(tokens * c.kv_heads), c.head_dim, kEps);
    }
    cpu::rope(q.data(), positions, c.heads, c.head_dim, c.rope_dim, c.layout, inv_freq);
    cpu::rope(k.data(), positions, c.kv_heads, c.head_dim, c.rope_dim, c.layout, inv_freq);

    const gpu::DeviceBuffer qkv_d = test::to_device(qkv), bias_d = test::to_device(bias);
    const gpu::DeviceBuffer positions_d = test::to_device(positions), inv_freq_d = test::to_device(inv_freq);
    const gpu::DeviceBuffer q_norm_d = test::to_device(q_norm), k_norm_d = test::to_device(k_norm);
    const float* q_norm_p = c.qk_norm ? q_norm_d.as<float>() : nullptr;
    const float* k_norm_p = c.qk_norm ? k_norm_d.as<float>() : nullptr;
    const gpu::DeviceBuffer q_d = poisoned(q.size(), 64), k_d = poisoned(k.size(), 64), v_d = poisoned(v.size(), 64);
    gpu::launch_qkv_rope(
        gpu::QkvRopeArgs{qkv_d.as<float>(), c.bias ? bias_d.as<float>() : nullptr, positions_d.as<int32_t>(),
                         inv_freq_d.as<float>(), q_d.as<float>(), k_d.as<float>(), v_d.as<float>(), tokens, c.heads,
                         c.kv_heads, c.head_dim, c.rope_dim, c.layout, q_norm_p, k_norm_p, kEps},
        nullptr);
    check_output(q_d, q, kTolerance);
    check_output(k_d, k, kTolerance);
    check_output(v_d, v, 0.0f);

    // With the KV write folded in: the same q, k, v, and 16-bit pools holding the bits
    // launch_write_kv_cache gives (block size 4, 3 blocks; token 4 is padding, slot -1).
    const KvLayout layout{3, c.kv_heads, 4, c.head_dim};
    const std::vector<int64_t> slots = {9, 0, 5, 11, -1, 2};
    const gpu::DeviceBuffer slots_d = test::to_device(slots);
    const auto check_fused_write = [&]<typename Kv>() {
      const bool float16 = std::is_same_v<Kv, __half>;
      CAPTURE(float16);
      const std::vector<Kv> fill(static_cast<std::size_t>(layout.elements_per_layer()), Kv(-3.0f));
      const gpu::DeviceBuffer k_pool = test::to_device(fill), v_pool = test::to_device(fill);
      const gpu::DeviceBuffer k_pool2 = test::to_device(fill), v_pool2 = test::to_device(fill);
      gpu::launch_write_kv_cache(KvWriteArgsOf<Kv>{k_d.as<float>(), v_d.as<float>(), slots_d.as<int64_t>(), tokens,
                                                   k_pool.as<Kv>(), v_pool.as<Kv>(), layout},
                                 nullptr);
      const gpu::DeviceBuffer q2 = poisoned(q.size(), 64), k2 = poisoned(k.size(), 64), v2 = poisoned(v.size(), 64);
      gpu::launch_qkv_rope(
          gpu::QkvRopeArgs{qkv_d.as<float>(), c.bias ? bias_d.as<float>() : nullptr, positions_d.as<int32_t>(),
                           inv_freq_d.as<float>(), q2.as<float>(), k2.as<float>(), v2.as<float>(), tokens, c.heads,
                           c.kv_heads, c.head_dim, c.rope_dim, c.layout, q_norm_p, k_norm_p, kEps},
          KvWriteArgsOf<Kv>{k2.as<float>(), v2.as<float>(), slots_d.as<int64_t>(), tokens, k_pool2.as<Kv>(),
                            v_pool2.as<Kv>(), layout},
          nullptr);
      check_output(q2, q, kTolerance);
      check_output(k2, k, kTolerance);
      check_output(v2, v, 0.0f);
      for (const auto& [separate, fused] : {std::pair{&k_pool, &k_pool2}, std::pair{&v_pool, &v_pool2}}) {
        const std::vector<uint16_t> a = test::to_host<uint16_t>(*separate), b = test::to_host<uint16_t>(*fused);
        CHECK(a == b);
        CHECK(a != test::to_host<uint16_t>(test::to_device(fill)));  // the write wrote something
      }
    };
    check_fused_write.template operator()<__nv_bfloat16>();
    check_fused_write.template operator()<__half>();
  }
}

TEST_CASE("gated activation: cpu::gated_activation (SwiGLU and GeGLU) on the fused gate/up rows") {
  REQUIRE_GPU();
  // expf and tanhf within 2 ulp of std::exp and std::tanh.
  constexpr float kTolerance = 1e-6f;
  const int32_t tokens = 3, ffn = 1536;
  const std::vector<float> gate_up = random_values(static_cast<std::size_t>(tokens * 2 * ffn), 7, 8.0f);
  for (const MlpActivation activation : {MlpActivation::kSilu, MlpActivation::kGeluTanh}) {
    CAPTURE(static_cast<int>(activation));
    std::vector<float> expected(static_cast<std::size_t>(tokens * ffn));
    for (int32_t t = 0; t < tokens; ++t)
      cpu::gated_activation(activation, gate_up.data() + t * 2 * ffn, gate_up.data() + t * 2 * ffn + ffn,
                            expected.data() + t * ffn, ffn);
    const gpu::DeviceBuffer in = test::to_device(gate_up);
    const gpu::DeviceBuffer out = poisoned(expected.size(), 100);
    gpu::launch_gated_activation(
        gpu::GatedActivationArgs<float>{in.as<float>(), out.as<float>(), tokens, ffn, activation}, nullptr);
    check_output(out, expected, kTolerance);
  }
}

TEST_CASE("soft-cap: cpu::soft_cap on logits far past the cap and near 0") {
  REQUIRE_GPU();
  constexpr float kTolerance = 1e-6f;  // tanhf within 2 ulp of std::tanh
  std::vector<float> logits = random_values(1000, 21, 200.0f);
  logits[3] = 0.0f;
  logits[4] = 1e-3f;
  const gpu::DeviceBuffer x = test::to_device(logits);
  cpu::soft_cap(logits.data(), logits.size(), 30.0f);
  gpu::launch_soft_cap(x.as<float>(), static_cast<int64_t>(logits.size()), 30.0f, nullptr);
  check_output(x, logits, kTolerance);
  CHECK(std::abs(logits[0]) < 30.0f);
}

TEST_CASE("dummy weights: the device fill equals make_dummy_weights; conversion rounds to bfloat16") {
  REQUIRE_GPU();
  ModelConfig config;
  config.num_layers = 1;
  config.hidden_size = 64;
  config.intermediate_size = 96;
  config.num_heads = 2;
  config.num_kv_heads = 1;
  config.head_dim = 32;
  config.rope_dim = 32;
  config.vocab_size = 40;
  const ModelWeights host = make_dummy_weights(config, 11);
  const std::vector<DummyTensor> tensors = dummy_tensors(config);
  for (std::size_t id = 0; id < tensors.size(); ++id) {
    if (tensors[id].name != "blk.0.ffn_up.weight") continue;
    const auto n = static_cast<std::size_t>(tensors[id].num_elements());
    const gpu::DeviceBuffer out = poisoned(n, 8);
    gpu::launch_fill_dummy(out.as<float>(), static_cast<int64_t>(n), 11, static_cast<uint32_t>(id), tensors[id].scale,
                           false, nullptr);
    check_output(out, std::vector<float>(host.layers[0].w_up, host.layers[0].w_up + n), 0.0f);

    const gpu::DeviceBuffer source = test::to_device(std::vector<float>(host.layers[0].w_up, host.layers[0].w_up + n));
    const gpu::DeviceBuffer bf16(n * 2);
    gpu::launch_dequantize(GgmlType::F32, source.as<std::byte>(), static_cast<int64_t>(n), bf16.as<__nv_bfloat16>(),
                           nullptr);
    const std::vector<__nv_bfloat16> rounded = test::to_host<__nv_bfloat16>(bf16);
    for (std::size_t i = 0; i < n; ++i)
      REQUIRE(__bfloat162float(rounded[i]) == __bfloat162float(__float2bfloat16(host.layers[0].w_up[i])));
  }
}

namespace {

constexpr uint16_t kSentinel16 = 0x7fc1;  // a NaN in both 16-bit types

// A bfloat16/float16 MLP input of kFusedMlpKernelMaxRows rows: x (rows, hidden) in [-1, 1) and
// w_gate_up (2 ffn, hidden) in [-2/sqrt(hidden), 2/sqrt(hidden)) (gate and up sums near
// +-0.7), rounded to the dtype; `x` and `w` hold the rounded values the device multiplies.
struct MlpProblem {
  int32_t hidden, ffn;
  std::vector<float> x, w;
  gpu::DeviceBuffer x_d, w_d;
};

float from_bits(bool bf16, uint16_t bits) { return bf16 ? bfloat16_to_float(bits) : half_to_float(bits); }

MlpProblem make_mlp_problem(bool bf16, int32_t hidden, int32_t ffn, uint32_t seed) {
  std::mt19937 rng(seed);
  auto upload = [&](std::vector<float>& values, float scale) {
    std::uniform_real_distribution<float> dist(-scale, scale);
    std::vector<uint16_t> bits(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      bits[i] = bf16 ? float_to_bfloat16(dist(rng)) : float_to_half(dist(rng));
      values[i] = from_bits(bf16, bits[i]);
    }
    return test::to_device(bits);
  };
  MlpProblem p{hidden,
               ffn,
               std::vector<float>(static_cast<std::size_t>(gpu::kFusedMlpKernelMaxRows) * hidden),
               std::vector<float>(2 * static_cast<std::size_t>(ffn) * hidden),
               {},
               {}};
  p.x_d = upload(p.x, 1.0f);
  p.w_d = upload(p.w, 2.0f / std::sqrt(static_cast<float>(hidden)));
  return p;
}

// The CPU reference of every row: gate and up as float64 sums of the same inputs, then
// cpu::gated_activation (float32), with each element's tolerance for a device result whose
// float32 sums err by at most `sum_bound` times sum |x_i w_i|:
//   - the sums' errors d_g, d_u move act by at most 1.2 (|up| + d_u) d_g + (|gate| + d_g) d_u
//     (|silu'| and |GELU-tanh'| < 1.2; |silu(g)| and |GELU(g)| <= |g|);
//   - expf/tanhf against std::exp/std::tanh and the cancellation in 1 + tanh: within
//     1e-6 (|gate| + 1) (|up| + 1);
//   - the one rounding to T: half an ulp, at most `rel_t` of the value (plus 2^-24 for
//     float16's subnormals).
struct MlpReference {
  std::vector<float> act;         // (rows, ffn)
  std::vector<double> tolerance;  // (rows, ffn)
};

MlpReference mlp_reference(const MlpProblem& p, MlpActivation activation, double sum_bound, double rel_t) {
  const auto hidden = static_cast<std::size_t>(p.hidden), ffn = static_cast<std::size_t>(p.ffn);
  const std::size_t rows = gpu::kFusedMlpKernelMaxRows;
  MlpReference ref{std::vector<float>(rows * ffn), std::vector<double>(rows * ffn)};
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < ffn; ++j) {
      double sums[2] = {0.0, 0.0}, abs_sums[2] = {0.0, 0.0};
      for (std::size_t half = 0; half < 2; ++half)
        for (std::size_t i = 0; i < hidden; ++i) {
          const double product = static_cast<double>(p.x[r * hidden + i]) * p.w[(half * ffn + j) * hidden + i];
          sums[half] += product;
          abs_sums[half] += std::abs(product);
        }
      const auto gate = static_cast<float>(sums[0]), up = static_cast<float>(sums[1]);
      float act = 0.0f;
      cpu::gated_activation(activation, &gate, &up, &act, 1);
      const double d_g = sum_bound * abs_sums[0], d_u = sum_bound * abs_sums[1];
      const double g = std::abs(sums[0]), u = std::abs(sums[1]);
      const double moved = 1.2 * (u + d_u) * d_g + (g + d_g) * d_u + 1e-6 * (g + 1.0) * (u + 1.0);
      ref.act[r * ffn + j] = act;
      ref.tolerance[r * ffn + j] = rel_t * std::abs(act) + (1.0 + rel_t) * moved + 0x1p-24;
    }
  return ref;
}

// out (num_rows, ffn) from `launch` into a buffer of sentinels one row longer, checked.
std::vector<uint16_t> run_mlp(const MlpProblem& p, int32_t num_rows, const std::function<void(void*)>& launch) {
  const auto n = static_cast<std::size_t>(num_rows) * static_cast<std::size_t>(p.ffn);
  const gpu::DeviceBuffer out =
      test::to_device(std::vector<uint16_t>(n + static_cast<std::size_t>(p.ffn), kSentinel16));
  launch(out.data());
  std::vector<uint16_t> got = test::to_host<uint16_t>(out);
  for (std::size_t i = n; i < got.size(); ++i) REQUIRE(got[i] == kSentinel16);
  got.resize(n);
  return got;
}

template <typename T>
gpu::FusedMlpArgs<T> fused_args(const MlpProblem& p, const T* x, void* out, int32_t num_rows,
                                MlpActivation activation) {
  return gpu::FusedMlpArgs<T>{x, p.w_d.as<T>(), static_cast<T*>(out), num_rows, p.hidden, p.ffn, activation};
}

// The worst |got - ref| / tolerance over the first got.size() elements: at most 1 passes.
double worst_tolerance_ratio(bool bf16, const std::vector<uint16_t>& got, const std::vector<float>& ref,
                             const std::vector<double>& tolerance) {
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double ratio = std::abs(static_cast<double>(from_bits(bf16, got[i])) - ref[i]) / tolerance[i];
    worst = std::isnan(ratio) ? INFINITY : std::max(worst, ratio);
  }
  return worst;
}

template <typename T>
void check_fused_mlp(gpu::DeviceDtype dtype) {
  const bool bf16 = dtype == gpu::DeviceDtype::BF16;
  const double rel_t = bf16 ? 0x1p-8 : 0x1p-11;
  gpu::CudaGemm gemm(nullptr, dtype);
  struct Shape {
    int32_t hidden, ffn;
  };
  // SmolLM2-135M's; Llama-3-8B's hidden size (a narrower ffn, for the CPU reference's sake);
  // fewer vectors per row than lanes with an odd ffn (a warp's second column past the end);
  // a row that ends inside an unrolled round; one vector per row.
  for (const Shape shape : {Shape{576, 1536}, Shape{4096, 1024}, Shape{200, 97}, Shape{2056, 33}, Shape{8, 3}}) {
    CAPTURE(shape.hidden);
    CAPTURE(shape.ffn);
    REQUIRE(gpu::fused_mlp_supports(gpu::kFusedMlpKernelMaxRows, shape.hidden));
    const MlpProblem p =
        make_mlp_problem(bf16, shape.hidden, shape.ffn, static_cast<uint32_t>(shape.hidden + shape.ffn));
    // The fused sums: a lane's <= 8 ceil(hidden / 256) products in sequence, then 5 adds.
    const double fused_bound = (8.0 * ((shape.hidden + 255) / 256) + 6.0) * 0x1p-24;
    // cuBLAS's, in any order with truncating accumulation (test_gpu_gemm.cpp): 2 hidden u.
    const double gemm_bound = 2.0 * shape.hidden * 0x1p-24;
    gpu::DeviceBuffer gate_up(static_cast<std::size_t>(gpu::kFusedMlpKernelMaxRows) * 2 * shape.ffn * sizeof(float));
    for (const MlpActivation activation : {MlpActivation::kSilu, MlpActivation::kGeluTanh}) {
      CAPTURE(static_cast<int>(activation));
      const MlpReference fused_ref = mlp_reference(p, activation, fused_bound, rel_t);
      const MlpReference gemm_ref = mlp_reference(p, activation, gemm_bound, rel_t);
      std::vector<double> both(fused_ref.tolerance.size());
      for (std::size_t i = 0; i < both.size(); ++i) both[i] = fused_ref.tolerance[i] + gemm_ref.tolerance[i];
      auto fused = [&](int32_t rows) {
        return run_mlp(p, rows, [&](void* out) {
          gpu::launch_fused_mlp(fused_args<T>(p, p.x_d.as<T>(), out, rows, activation), nullptr);
        });
      };
      const std::vector<uint16_t> widest = fused(gpu::kFusedMlpKernelMaxRows);
      int64_t num_same_as_gemm = 0, num_values = 0;
      for (int32_t rows = 1; rows <= gpu::kFusedMlpKernelMaxRows; ++rows) {
        CAPTURE(rows);
        const std::vector<uint16_t> got = fused(rows);
        CHECK(worst_tolerance_ratio(bf16, got, fused_ref.act, fused_ref.tolerance) <= 1.0);
        // A row's bits do not depend on how many rows run beside it.
        CHECK(std::equal(got.begin(), got.end(), widest.begin()));
        const std::vector<uint16_t> separate = run_mlp(p, rows, [&](void* out) {
          gemm.run(p.x_d.data(), p.w_d.data(), gate_up.as<float>(), rows, shape.hidden, 2 * shape.ffn);
          gpu::launch_gated_activation(
              gpu::GatedActivationArgs<T>{gate_up.as<float>(), static_cast<T*>(out), rows, shape.ffn, activation},
              nullptr);
        });
        std::vector<float> separate_values(separate.size());
        for (std::size_t i = 0; i < separate.size(); ++i) separate_values[i] = from_bits(bf16, separate[i]);
        CHECK(worst_tolerance_ratio(bf16, got, separate_values, both) <= 1.0);
        for (std::size_t i = 0; i < got.size(); ++i) num_same_as_gemm += got[i] == separate[i];
        num_values += static_cast<int64_t>(got.size());
      }
      MESSAGE("fused vs cuBLAS + activation: " << num_same_as_gemm << " of " << num_values << " values the same bits");
      // Nor on which rows they are: x from its second row on gives the widest run's rows 1...
      const std::vector<uint16_t> shifted = run_mlp(p, gpu::kFusedMlpKernelMaxRows - 1, [&](void* out) {
        gpu::launch_fused_mlp(
            fused_args<T>(p, p.x_d.as<T>() + shape.hidden, out, gpu::kFusedMlpKernelMaxRows - 1, activation), nullptr);
      });
      CHECK(std::equal(shifted.begin(), shifted.end(), widest.begin() + shape.ffn));
    }
  }

  // Outside fused_mlp_supports the launch refuses (the backend runs the GEMM path there).
  const MlpProblem odd = make_mlp_problem(bf16, 100, 16, 5);
  CHECK_FALSE(gpu::fused_mlp_supports(1, 100));
  gpu::DeviceBuffer out(static_cast<std::size_t>(gpu::kFusedMlpKernelMaxRows + 1) * 2 * 16 * sizeof(T));
  CHECK_THROWS_AS(
      gpu::launch_fused_mlp(fused_args<T>(odd, odd.x_d.as<T>(), out.data(), 1, MlpActivation::kSilu), nullptr), Error);
  const MlpProblem even = make_mlp_problem(bf16, 96, 16, 6);
  for (const int32_t rows : {0, gpu::kFusedMlpKernelMaxRows + 1})
    CHECK_THROWS_AS(
        gpu::launch_fused_mlp(fused_args<T>(even, even.x_d.as<T>(), out.data(), rows, MlpActivation::kSilu), nullptr),
        Error);
  CHECK_THROWS_AS(  // x one element off its 16-byte alignment
      gpu::launch_fused_mlp(fused_args<T>(even, even.x_d.as<T>() + 1, out.data(), 1, MlpActivation::kSilu), nullptr),
      Error);
}

}  // namespace

TEST_CASE(
    "fused gate/up + activation: the CPU reference and cuBLAS + launch_gated_activation within bfloat16/float16 "
    "rounding, rows 1 to kFusedMlpKernelMaxRows; a row's bits independent of the batch; unsupported shapes refused") {
  REQUIRE_GPU();
  SUBCASE("bfloat16") { check_fused_mlp<__nv_bfloat16>(gpu::DeviceDtype::BF16); }
  SUBCASE("float16") { check_fused_mlp<__half>(gpu::DeviceDtype::F16); }
}

namespace {

template <typename T>
T to_storage(float x) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(x);
  else
    return __float2bfloat16_rn(x);
}

template <typename T>
float from_storage(T x) {
  if constexpr (std::is_same_v<T, __half>)
    return __half2float(x);
  else
    return __bfloat162float(x);
}

// The first expected.size() values of a T buffer against a float32 reference. The device
// rounds its float32 result once to T (to nearest), and that result is within
// `float32_tolerance` of the reference (relative, or absolute below 1: the float32 cases'
// check_output): so it holds the reference rounded to T, moved by at most that and one ulp
// of T (2^-7 of the value in bfloat16, 2^-10 in float16, plus float16's subnormal
// spacing). The rest keep the sentinel.
template <typename T>
void check_rounded(const gpu::DeviceBuffer& buffer, const std::vector<float>& expected, float float32_tolerance) {
  const double relative_ulp = std::is_same_v<T, __half> ? 0x1p-10 : 0x1p-7;
  const std::vector<T> got = test::to_host<T>(buffer);
  REQUIRE(got.size() >= expected.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double magnitude = std::abs(expected[i]);
    const double tolerance = relative_ulp * magnitude + 0x1p-24 + float32_tolerance * std::max(1.0, magnitude);
    const double diff = std::abs(from_storage(got[i]) - from_storage(to_storage<T>(expected[i])));
    const double ratio = diff / tolerance;
    worst = std::isnan(ratio) ? INFINITY : std::max(worst, ratio);
  }
  CHECK(worst <= 1.0);
  const std::vector<uint16_t> bits = test::to_host<uint16_t>(buffer);
  for (std::size_t i = expected.size(); i < bits.size(); ++i) REQUIRE(bits[i] == kSentinel16);
}

// A buffer of n + extra T values holding the 16-bit sentinel.
gpu::DeviceBuffer poisoned16(std::size_t n, std::size_t extra) {
  return test::to_device(std::vector<uint16_t>(n + extra, kSentinel16));
}

// The kernels that read or write the storage type T outside the GEMMs, the fused MLP and
// attention: the embedding gather from a T table (exact: the table's values are T's), and
// RMSNorm and the gated activation into T (the float32 results of the cases above,
// rounded once). Their KV writes in T are the QKV + RoPE case's.
template <typename T>
void check_storage_kernels() {
  const int32_t vocab = 50, hidden = 72;
  std::vector<float> table = random_values(vocab * hidden, 31);
  std::vector<T> table_t(table.size());
  for (std::size_t i = 0; i < table.size(); ++i) {
    table_t[i] = to_storage<T>(table[i]);
    table[i] = from_storage(table_t[i]);
  }
  const std::vector<int32_t> ids = {3, 49, 0, 3, 17};
  const float scale = std::sqrt(static_cast<float>(hidden));
  std::vector<float> gathered(ids.size() * hidden);
  cpu::embedding_gather(table.data(), ids, gathered.data(), hidden);
  cpu::scale_in_place(gathered.data(), gathered.size(), scale);
  const gpu::DeviceBuffer table_d = test::to_device(table_t), ids_d = test::to_device(ids);
  const gpu::DeviceBuffer embedded = poisoned(gathered.size(), 2 * hidden);
  gpu::launch_embedding_gather(gpu::EmbeddingArgs<T>{table_d.as<T>(), ids_d.as<int32_t>(), embedded.as<float>(),
                                                     static_cast<int32_t>(ids.size()), hidden, scale},
                               nullptr);
  check_output(embedded, gathered, 0.0f);

  const int32_t rows = 5, dim = 576;
  const std::vector<float> x = random_values(rows * dim, 32, 3.0f), residual = random_values(rows * dim, 33);
  const std::vector<float> weight = random_values(dim, 34);
  std::vector<float> summed = x;
  for (std::size_t i = 0; i < summed.size(); ++i) summed[i] += residual[i];
  std::vector<float> normed(summed.size());
  cpu::rms_norm(summed.data(), weight.data(), normed.data(), rows, dim, 1e-5f);
  const gpu::DeviceBuffer x_d = test::to_device(x), residual_d = test::to_device(residual);
  const gpu::DeviceBuffer weight_d = test::to_device(weight), normed_d = poisoned16(normed.size(), dim);
  gpu::launch_add_rms_norm(gpu::RmsNormArgs<T>{x_d.as<float>(), residual_d.as<float>(), weight_d.as<float>(),
                                               normed_d.as<T>(), nullptr, rows, dim, 1e-5f},
                           nullptr);
  check_rounded<T>(normed_d, normed, 1e-6f);  // sums of squares in double on both sides
  check_output(x_d, summed, 0.0f);

  const int32_t tokens = 3, ffn = 1536;
  const std::vector<float> gate_up = random_values(static_cast<std::size_t>(tokens * 2 * ffn), 35, 8.0f);
  const gpu::DeviceBuffer gate_up_d = test::to_device(gate_up);
  for (const MlpActivation activation : {MlpActivation::kSilu, MlpActivation::kGeluTanh}) {
    CAPTURE(static_cast<int>(activation));
    std::vector<float> act(static_cast<std::size_t>(tokens * ffn));
    for (int32_t t = 0; t < tokens; ++t)
      cpu::gated_activation(activation, gate_up.data() + t * 2 * ffn, gate_up.data() + t * 2 * ffn + ffn,
                            act.data() + t * ffn, ffn);
    const gpu::DeviceBuffer act_d = poisoned16(act.size(), 100);
    gpu::launch_gated_activation(
        gpu::GatedActivationArgs<T>{gate_up_d.as<float>(), act_d.as<T>(), tokens, ffn, activation}, nullptr);
    check_rounded<T>(act_d, act, 1e-6f);  // expf and tanhf within 2 ulp of std::exp and std::tanh
  }
}

}  // namespace

TEST_CASE(
    "float16 and bfloat16 storage: the embedding gather from the table exactly; RMSNorm and the gated "
    "activation within one rounding to the type of the CPU reference") {
  REQUIRE_GPU();
  SUBCASE("float16") { check_storage_kernels<__half>(); }
  SUBCASE("bfloat16") { check_storage_kernels<__nv_bfloat16>(); }
}
