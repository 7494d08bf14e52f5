// The CUDA backend's weight upload plan, run on the CPU (model/weight_upload_plan.h): the
// plan's chunks, converted with convert_chunk into host buffers of the layout's sizes
// (model/device_weight_layout.h), give every placed tensor exactly
// the bytes of the float32 weights (load_model_weights) converted whole, on Phi-3 files
// (fused QKV and gate/up tensors, F32 and Q8_0), Qwen3 and Gemma 2/3 files (q/k norms, post
// norms, the window layers' RoPE table) and the default model when installed; and
// a missing or misshapen tensor is an Error naming it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "loader/model_files.h"
#include "model/device_weight_layout.h"
#include "model/model_weights.h"
#include "weight_upload_plan.h"
#include "host_weight_upload.h"
#include "test_paths.h"
#include "util/error.h"
#include "util/half.h"

using namespace pagedgen;

namespace {

constexpr WeightDtype kUploadDtypes[] = {WeightDtype::kFloat32, WeightDtype::kFloat16, WeightDtype::kBFloat16};

// The float32 weights of every placed tensor, by name.
std::map<std::string, const float*> float_sources(const ModelConfig& c, const ModelWeights& w) {
  std::map<std::string, const float*> s;
  s["token_embd.weight"] = w.token_embd;
  s["output.weight"] = w.output;
  s["output_norm.weight"] = w.output_norm;
  s[std::string(DeviceWeightLayout::kRopeInvFreq)] = w.rope_inv_freq.data();
  s[std::string(DeviceWeightLayout::kWindowRopeInvFreq)] = w.rope_inv_freq_window.data();
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    const LayerWeights& l = w.layers[static_cast<std::size_t>(i)];
    s[p + "attn_norm.weight"] = l.attn_norm;
    s[p + "attn_q.weight"] = l.wq;
    s[p + "attn_k.weight"] = l.wk;
    s[p + "attn_v.weight"] = l.wv;
    s[p + "attn_q.bias"] = l.bq;
    s[p + "attn_k.bias"] = l.bk;
    s[p + "attn_v.bias"] = l.bv;
    s[p + "attn_q_norm.weight"] = l.q_norm;
    s[p + "attn_k_norm.weight"] = l.k_norm;
    s[p + "attn_output.weight"] = l.wo;
    s[p + "post_attention_norm.weight"] = l.attn_post_norm;
    s[p + "post_ffw_norm.weight"] = l.ffn_post_norm;
    s[p + "ffn_norm.weight"] = l.ffn_norm;
    s[p + "ffn_gate.weight"] = l.w_gate;
    s[p + "ffn_up.weight"] = l.w_up;
    s[p + "ffn_down.weight"] = l.w_down;
  }
  return s;
}

uint32_t element_bits(const std::vector<std::byte>& buffer, std::size_t index, std::size_t element_bytes) {
  uint32_t bits = 0;
  std::memcpy(&bits, buffer.data() + index * element_bytes, element_bytes);
  return bits;
}

// Runs the plan into host buffers and compares every placement with the float32 weights.
void check_plan_on_cpu(const ModelFiles& files, std::size_t max_chunk_bytes) {
  const ModelConfig& c = files.config();
  const ModelWeights weights = files.load_weights(WeightForm::kFloat32);
  const std::map<std::string, const float*> sources = float_sources(c, weights);
  for (const WeightDtype dtype : kUploadDtypes) {
    CAPTURE(weight_dtype_name(dtype));
    const DeviceWeightLayout layout(c, dtype);
    const WeightUploadPlan plan(c, layout, files.tensors(), files.path().string(), max_chunk_bytes);
    const std::size_t typed_bytes = weight_dtype_bytes(dtype);
    std::size_t num_chunks = 0;
    for (const TensorUpload& upload : plan.uploads()) {
      for (const TensorChunk& chunk : upload.chunks) REQUIRE(chunk.num_bytes <= plan.max_chunk_bytes());
      num_chunks += upload.chunks.size();
    }
    CHECK(num_chunks > plan.uploads().size());  // the chunk size cut tensors
    REQUIRE(plan.computed().size() == (c.window_rope_differs() ? 2u : 1u));
    REQUIRE(plan.computed()[0].values == weights.rope_inv_freq);
    if (c.window_rope_differs()) REQUIRE(plan.computed()[1].values == weights.rope_inv_freq_window);
    const test::HostWeightBuffers buffers = test::run_plan_on_host(plan, layout);
    const std::vector<std::byte>& typed = buffers.typed;
    const std::vector<std::byte>& float32 = buffers.float32;
    for (const WeightPlacement& p : layout.placements()) {
      CAPTURE(p.name);
      const float* source = sources.at(p.name);
      REQUIRE(source != nullptr);
      std::size_t mismatches = 0;
      for (std::size_t i = 0; i < p.num_elements; ++i) {
        const float v = source[i];
        if (!p.typed) {
          mismatches += element_bits(float32, p.offset + i, 4) != float_bits(v);
          continue;
        }
        const uint32_t expected = dtype == WeightDtype::kFloat32   ? float_bits(v)
                                  : dtype == WeightDtype::kFloat16 ? float_to_half(v)
                                                                   : float_to_bfloat16(v);
        mismatches += element_bits(typed, p.offset + i, typed_bytes) != expected;
      }
      REQUIRE(mismatches == 0);
    }
  }
}

std::string plan_error(const ModelFiles& files, const std::vector<RawTensor>& tensors) {
  const DeviceWeightLayout layout(files.config(), WeightDtype::kBFloat16);
  try {
    const WeightUploadPlan plan(files.config(), layout, tensors, "model.gguf", 1 << 20);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("plan on the CPU: Phi-3's fused tensors, F32 file, chunks that cut rows") {
  const ModelFiles files(test::data_dir() / "arch-reference" / "phi3" / "model.gguf");
  check_plan_on_cpu(files, 1000);
}

TEST_CASE("plan on the CPU: Phi-3 Q8_0 file, one block per chunk") {
  const ModelFiles files(test::data_dir() / "arch-reference" / "phi3" / "q8_0" / "model.gguf");
  check_plan_on_cpu(files, 1);
}

TEST_CASE("plan on the CPU: Qwen3's q/k norms, Gemma 2's post norms, Gemma 3's window RoPE table") {
  for (const char* arch : {"qwen3", "gemma2", "gemma3"}) {
    CAPTURE(arch);
    const ModelFiles files(test::data_dir() / "arch-reference" / arch / "model.gguf");
    const ModelConfig& c = files.config();
    CHECK((c.qk_norm || c.post_norms));
    const DeviceWeightLayout layout(c, WeightDtype::kBFloat16);
    CHECK(std::ranges::any_of(layout.placements(), [&](const WeightPlacement& p) {
      return p.name == (c.qk_norm ? "blk.1.attn_q_norm.weight" : "blk.1.post_ffw_norm.weight");
    }));
    check_plan_on_cpu(files, 1000);
  }
}

TEST_CASE("plan on the CPU: the default model") {
  const std::optional<std::filesystem::path> path = test::default_model();
  if (!path) {
    MESSAGE("skipped: the default model is not installed (scripts/fetch-model.sh)");
    return;
  }
  check_plan_on_cpu(ModelFiles(*path), std::size_t{3} << 20);
}

TEST_CASE("plan: a missing or misshapen tensor is an Error naming it") {
  const ModelFiles files(test::data_dir() / "arch-reference" / "phi3" / "model.gguf");
  std::vector<RawTensor> tensors = files.tensors();
  CHECK(plan_error(files, tensors).empty());
  std::vector<RawTensor> missing;
  for (const RawTensor& t : tensors)
    if (t.name != "blk.1.ffn_down.weight") missing.push_back(t);
  CHECK(plan_error(files, missing) ==
        "model.gguf: tensor 'blk.1.ffn_down.weight' is missing; the file does not hold a complete phi3 model");
  for (RawTensor& t : tensors)
    if (t.name == "output_norm.weight") t.shape[0] -= 1;
  const std::string misshapen = plan_error(files, tensors);
  CHECK(misshapen.find("tensor 'output_norm.weight' has shape") != std::string::npos);
}
