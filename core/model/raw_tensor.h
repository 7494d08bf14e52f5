// One weight tensor as stored in a model file, before dequantization, under its canonical
// GGUF-style name. The model's files (loader/model_files.h) list them; load_model_weights
// reads them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/ggml_type.h"

namespace pagedgen {

// One stored weight tensor, before dequantization.
struct RawTensor {
  std::string name;               // canonical name, e.g. "blk.3.attn_q.weight"
  std::string stored_name;        // name in the file, e.g. "model.layers.3.self_attn.q_proj.weight"
  std::vector<uint64_t> shape;    // row-major, outermost first: {out_features, in_features}
  uint32_t raw_type;              // GgmlType number (safetensors F32/F16/BF16 map to theirs)
  std::span<const std::byte> data;
};

}  // namespace pagedgen
