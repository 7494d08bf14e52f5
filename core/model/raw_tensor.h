// One weight tensor as stored in a model file, before dequantization, under its canonical
// GGUF-style name. The model's files (loader/model_files.h) list them; load_model_weights
// and the CUDA backend's upload read them, after the checks below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/ggml_type.h"

namespace pagedgen {

// One stored weight tensor, before dequantization.
struct RawTensor {
  std::string name;             // canonical name, e.g. "blk.3.attn_q.weight"
  std::string stored_name;      // name in the file, e.g. "model.layers.3.self_attn.q_proj.weight"
  std::vector<uint64_t> shape;  // row-major, outermost first: {out_features, in_features}
  uint32_t raw_type;            // GgmlType number (safetensors F32/F16/BF16 map to theirs)
  std::span<const std::byte> data;
};

// The tensor with canonical name `name`, or nullptr.
const RawTensor* find_raw_tensor(std::span<const RawTensor> tensors, std::string_view name);

// Throws Error naming the tensor and `source` (the model file) when its shape is not
// `shape` or its type is not one pagedgen can load.
void check_raw_tensor(const RawTensor& tensor, std::span<const uint64_t> shape, const std::string& source);

// Throws Error: `source` lacks tensor `name`, which a complete `architecture` model has.
[[noreturn]] void fail_missing_tensor(const std::string& source, std::string_view name, std::string_view architecture);

}  // namespace pagedgen
