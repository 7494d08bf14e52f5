#include "backend/kv_pool_budget.h"

#include <algorithm>

#include "util/byte_units.h"
#include "util/error.h"

namespace pagedgen {

int32_t num_blocks_in(uint64_t bytes, std::size_t bytes_per_block, std::size_t block_size) {
  const uint64_t blocks = bytes / bytes_per_block;
  if (blocks == 0)
    fail_setting("kv_cache_memory", "{} holds no block of {} ({} tokens); give more memory or a smaller block size",
                 format_bytes(bytes), format_bytes(bytes_per_block), block_size);
  return static_cast<int32_t>(std::min<uint64_t>(blocks, INT32_MAX));
}

int32_t host_pool_blocks(const KvPoolBudget& budget, std::size_t bytes_per_block, std::size_t block_size) {
  if (budget.num_blocks) return *budget.num_blocks;
  return num_blocks_in(budget.bytes.value_or(KvPoolBudget::kDefaultHostBytes), bytes_per_block, block_size);
}

std::vector<int32_t> split_kv_pool(int32_t num_blocks, std::size_t bytes_per_block, std::span<const int32_t> windows,
                                   std::span<const std::size_t> kind_bytes_per_block, int32_t block_size,
                                   int32_t max_num_seqs, int32_t max_batch_tokens) {
  PG_CHECK(!windows.empty() && windows.size() == kind_bytes_per_block.size() && windows.front() == 0 && block_size > 0,
           "{} layer kinds with {} byte sizes", windows.size(), kind_bytes_per_block.size());
  if (windows.size() == 1) return {num_blocks};
  const auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  std::vector<int32_t> blocks(windows.size(), 0);
  uint64_t bytes_left = static_cast<uint64_t>(num_blocks) * bytes_per_block;
  for (std::size_t kind = 1; kind < windows.size(); ++kind) {
    const int64_t most_held =
        int64_t{max_num_seqs} * (ceil_div(windows[kind] - 1, block_size) + 2) + ceil_div(max_batch_tokens, block_size);
    blocks[kind] = static_cast<int32_t>(std::min<int64_t>(num_blocks, most_held));
    bytes_left -= static_cast<uint64_t>(blocks[kind]) * kind_bytes_per_block[kind];
  }
  blocks.front() = static_cast<int32_t>(std::min<uint64_t>(bytes_left / kind_bytes_per_block.front(), INT32_MAX));
  return blocks;
}

}  // namespace pagedgen
