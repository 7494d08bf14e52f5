#include "device_weights.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

#include "cuda_check.h"
#include "dtype_dispatch.h"
#include "model/dummy_weights.h"
#include "util/error.h"
#include "weight_kernels.h"

namespace pagedgen::gpu {

namespace {

// Where one canonical tensor goes: an element offset in the typed buffer (matrices) or the
// float32 buffer (norms, biases).
struct Placement {
  bool typed;
  std::size_t offset;  // elements
  std::size_t num_elements;
};

// Offsets are kept 256-byte aligned.
std::size_t aligned(std::size_t elements, std::size_t element_bytes) {
  const std::size_t per_line = 256 / element_bytes;
  return (elements + per_line - 1) / per_line * per_line;
}

class Layout {
 public:
  explicit Layout(std::size_t typed_bytes) : typed_bytes_(typed_bytes) {}

  // Matrices that the GEMMs read as one are placed back to back (no alignment gap).
  void matrices(const std::vector<std::pair<std::string, std::size_t>>& parts) {
    for (const auto& [name, n] : parts) {
      placements_[name] = Placement{true, typed_elements_, n};
      typed_elements_ += n;
    }
    typed_elements_ = aligned(typed_elements_, typed_bytes_);
  }
  void vectors(const std::vector<std::pair<std::string, std::size_t>>& parts) {
    for (const auto& [name, n] : parts) {
      placements_[name] = Placement{false, float_elements_, n};
      float_elements_ += n;
    }
    float_elements_ = aligned(float_elements_, sizeof(float));
  }

  const std::map<std::string, Placement>& placements() const { return placements_; }
  const Placement& at(const std::string& name) const { return placements_.at(name); }
  std::size_t typed_elements() const { return typed_elements_; }
  std::size_t float_elements() const { return float_elements_; }

 private:
  std::size_t typed_bytes_;
  std::size_t typed_elements_ = 0;
  std::size_t float_elements_ = 0;
  std::map<std::string, Placement> placements_;
};

Layout weight_layout(const ModelConfig& c, DeviceDtype dtype) {
  const auto hidden = static_cast<std::size_t>(c.hidden_size);
  const auto q_dim = static_cast<std::size_t>(c.num_heads * c.head_dim);
  const auto kv_dim = static_cast<std::size_t>(c.num_kv_heads * c.head_dim);
  const auto ffn = static_cast<std::size_t>(c.intermediate_size);
  const auto vocab = static_cast<std::size_t>(c.vocab_size);
  Layout layout(device_dtype_bytes(dtype));
  layout.matrices({{"token_embd.weight", vocab * hidden}});
  if (!c.tied_embeddings) layout.matrices({{"output.weight", vocab * hidden}});
  layout.vectors({{"output_norm.weight", hidden}, {"rope_inv_freq", static_cast<std::size_t>(c.rope_dim / 2)}});
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    layout.matrices({{p + "attn_q.weight", q_dim * hidden},
                     {p + "attn_k.weight", kv_dim * hidden},
                     {p + "attn_v.weight", kv_dim * hidden}});
    layout.matrices({{p + "attn_output.weight", hidden * q_dim}});
    layout.matrices({{p + "ffn_gate.weight", ffn * hidden}, {p + "ffn_up.weight", ffn * hidden}});
    layout.matrices({{p + "ffn_down.weight", hidden * ffn}});
    layout.vectors({{p + "attn_norm.weight", hidden}, {p + "ffn_norm.weight", hidden}});
    if (c.qkv_bias)
      layout.vectors({{p + "attn_q.bias", q_dim}, {p + "attn_k.bias", kv_dim}, {p + "attn_v.bias", kv_dim}});
  }
  return layout;
}

// Allocates the buffers of `layout` and sets every pointer of `w` into them.
void place_weights(DeviceWeights& w, const ModelConfig& c, const Layout& layout, DeviceDtype dtype,
                  DeviceBuffer& typed, DeviceBuffer& float32) {
  const std::size_t element_bytes = device_dtype_bytes(dtype);
  typed = DeviceBuffer(layout.typed_elements() * element_bytes);
  float32 = DeviceBuffer(layout.float_elements() * sizeof(float));
  auto matrix = [&](const std::string& name) -> const void* {
    return typed.as<std::byte>() + layout.at(name).offset * element_bytes;
  };
  auto vector = [&](const std::string& name) -> const float* { return float32.as<float>() + layout.at(name).offset; };
  w.token_embd = matrix("token_embd.weight");
  w.output = c.tied_embeddings ? w.token_embd : matrix("output.weight");
  w.output_norm = vector("output_norm.weight");
  w.rope_inv_freq = vector("rope_inv_freq");
  w.layers.clear();
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    w.layers.push_back(DeviceLayerWeights{vector(p + "attn_norm.weight"), matrix(p + "attn_q.weight"),
                                          c.qkv_bias ? vector(p + "attn_q.bias") : nullptr,
                                          matrix(p + "attn_output.weight"), vector(p + "ffn_norm.weight"),
                                          matrix(p + "ffn_gate.weight"), matrix(p + "ffn_down.weight")});
  }
}

}  // namespace

DeviceWeights DeviceWeights::upload(const ModelConfig& c, const ModelWeights& weights, DeviceDtype dtype,
                                    cudaStream_t stream) {
  DeviceWeights w;
  const Layout layout = weight_layout(c, dtype);
  place_weights(w, c, layout, dtype, w.typed_, w.float32_);

  // Host float32 source of every placed tensor.
  std::map<std::string, const float*> source;
  source["token_embd.weight"] = weights.token_embd;
  if (!c.tied_embeddings) source["output.weight"] = weights.output;
  source["output_norm.weight"] = weights.output_norm;
  source["rope_inv_freq"] = weights.rope_inv_freq.data();
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    const LayerWeights& l = weights.layers[static_cast<std::size_t>(i)];
    source[p + "attn_norm.weight"] = l.attn_norm;
    source[p + "attn_q.weight"] = l.wq;
    source[p + "attn_k.weight"] = l.wk;
    source[p + "attn_v.weight"] = l.wv;
    source[p + "attn_output.weight"] = l.wo;
    source[p + "ffn_norm.weight"] = l.ffn_norm;
    source[p + "ffn_gate.weight"] = l.w_gate;
    source[p + "ffn_up.weight"] = l.w_up;
    source[p + "ffn_down.weight"] = l.w_down;
    if (c.qkv_bias) {
      source[p + "attn_q.bias"] = l.bq;
      source[p + "attn_k.bias"] = l.bk;
      source[p + "attn_v.bias"] = l.bv;
    }
  }

  // Matrices go through a float32 staging buffer and are converted on the device.
  constexpr std::size_t kStagingElements = std::size_t{16} << 20;
  const std::size_t element_bytes = device_dtype_bytes(dtype);
  DeviceBuffer staging(kStagingElements * sizeof(float));
  for (const auto& [name, placement] : layout.placements()) {
    const float* host = source.at(name);
    PG_CHECK(host != nullptr, "host weights lack '{}'", name);
    if (!placement.typed) {
      CUDA_CHECK(cudaMemcpyAsync(w.float32_.as<float>() + placement.offset, host, placement.num_elements * sizeof(float),
                                 cudaMemcpyHostToDevice, stream));
      continue;
    }
    std::byte* dst = w.typed_.as<std::byte>() + placement.offset * element_bytes;
    for (std::size_t begin = 0; begin < placement.num_elements; begin += kStagingElements) {
      const std::size_t n = std::min(kStagingElements, placement.num_elements - begin);
      CUDA_CHECK(cudaMemcpyAsync(staging.data(), host + begin, n * sizeof(float), cudaMemcpyHostToDevice, stream));
      dispatch_dtype(dtype, [&]<typename T>(TypeTag<T>) {
        launch_convert_from_float(staging.as<float>(), reinterpret_cast<T*>(dst) + begin, static_cast<int64_t>(n),
                                  stream);
      });
      // The staging buffer is reused by the next chunk: wait for the conversion.
      CUDA_CHECK(cudaStreamSynchronize(stream));
    }
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return w;
}

DeviceWeights DeviceWeights::dummy(const ModelConfig& c, uint64_t seed, DeviceDtype dtype, cudaStream_t stream) {
  DeviceWeights w;
  const Layout layout = weight_layout(c, dtype);
  place_weights(w, c, layout, dtype, w.typed_, w.float32_);
  const std::size_t element_bytes = device_dtype_bytes(dtype);
  const std::vector<DummyTensor> tensors = dummy_tensors(c);
  for (std::size_t id = 0; id < tensors.size(); ++id) {
    const DummyTensor& t = tensors[id];
    const Placement& placement = layout.at(t.name);
    PG_CHECK(placement.num_elements == t.num_elements(), "dummy tensor '{}' has {} elements, placed {}", t.name,
             t.num_elements(), placement.num_elements);
    const auto n = static_cast<int64_t>(placement.num_elements);
    const auto tensor_id = static_cast<uint32_t>(id);
    if (!placement.typed) {
      launch_fill_dummy(w.float32_.as<float>() + placement.offset, n, seed, tensor_id, t.scale, t.ones, stream);
      continue;
    }
    std::byte* dst = w.typed_.as<std::byte>() + placement.offset * element_bytes;
    dispatch_dtype(dtype, [&]<typename T>(TypeTag<T>) {
      launch_fill_dummy(reinterpret_cast<T*>(dst), n, seed, tensor_id, t.scale, t.ones, stream);
    });
  }
  const std::vector<float> inv_freq = rope_inverse_frequencies(c, nullptr);
  CUDA_CHECK(cudaMemcpyAsync(w.float32_.as<float>() + layout.at("rope_inv_freq").offset, inv_freq.data(),
                             inv_freq.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return w;
}

}  // namespace pagedgen::gpu
