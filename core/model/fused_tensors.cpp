#include "model/fused_tensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "model/ggml_type.h"
#include "util/error.h"

namespace pagedgen {

namespace {

struct Part {
  const char* name;  // e.g. "attn_q"
  uint64_t rows;
};

bool has(std::span<const RawTensor> tensors, const std::string& name) {
  return std::ranges::find(tensors, name, &RawTensor::name) != tensors.end();
}

// The parts of `fused` (rows, cols) as row-range views, in order:
//   rows [0, parts[0].rows) -> parts[0], the next parts[1].rows -> parts[1], ...
void split(const RawTensor& fused, const std::string& layer_prefix, std::span<const Part> parts,
           const std::string& source, std::vector<RawTensor>& out) {
  uint64_t total_rows = 0;
  for (const Part& part : parts) total_rows += part.rows;
  if (fused.shape.size() != 2 || fused.shape[0] != total_rows) {
    std::vector<std::string> names;
    for (const Part& part : parts) names.push_back(fmt::format("{} {} rows", part.name, part.rows));
    fail("{}: tensor '{}' has shape {}, expected {}x{} for this model's config ({})", source, fused.stored_name,
         fmt::join(fused.shape, "x"), total_rows, fused.shape.size() == 2 ? fused.shape[1] : 0,
         fmt::join(names, " + "));
  }
  const std::optional<GgmlTypeLayout> layout = ggml_type_layout(fused.raw_type);
  const uint64_t cols = fused.shape[1];
  if (!layout || cols % layout->block_elements != 0)
    fail("{}: tensor '{}' of type {} cannot be split into rows of {} values", source, fused.stored_name,
         ggml_type_name(fused.raw_type), cols);
  const uint64_t row_bytes = cols / layout->block_elements * layout->block_bytes;
  PG_CHECK(fused.data.size() == total_rows * row_bytes, "tensor '{}' holds {} bytes, not {} rows of {}",
           fused.stored_name, fused.data.size(), total_rows, row_bytes);
  uint64_t first_row = 0;
  for (const Part& part : parts) {
    out.push_back({layer_prefix + part.name + ".weight",
                   fmt::format("{} (rows {} to {})", fused.stored_name, first_row, first_row + part.rows - 1),
                   {part.rows, cols},
                   fused.raw_type,
                   fused.data.subspan(first_row * row_bytes, part.rows * row_bytes)});
    first_row += part.rows;
  }
}

}  // namespace

std::vector<RawTensor> split_fused_tensors(std::span<const RawTensor> tensors, const ModelConfig& c,
                                           const std::string& source) {
  const auto q_rows = static_cast<uint64_t>(c.num_heads * c.head_dim);
  const auto kv_rows = static_cast<uint64_t>(c.num_kv_heads * c.head_dim);
  const auto ffn = static_cast<uint64_t>(c.intermediate_size);
  std::vector<RawTensor> out;
  out.reserve(tensors.size() + 3 * static_cast<std::size_t>(c.num_layers));
  for (const RawTensor& t : tensors) {
    const auto dot = t.name.find('.', 4);  // "blk.N." ends at the second dot
    const std::string prefix = t.name.starts_with("blk.") && dot != std::string::npos ? t.name.substr(0, dot + 1) : "";
    if (!prefix.empty() && t.name == prefix + "attn_qkv.weight") {
      const Part parts[] = {{"attn_q", q_rows}, {"attn_k", kv_rows}, {"attn_v", kv_rows}};
      split(t, prefix, parts, source, out);
    } else if (!prefix.empty() && t.name == prefix + "ffn_up.weight" && !has(tensors, prefix + "ffn_gate.weight")) {
      const Part parts[] = {{"ffn_gate", ffn}, {"ffn_up", ffn}};
      split(t, prefix, parts, source, out);
    } else {
      out.push_back(t);
    }
  }
  return out;
}

}  // namespace pagedgen
