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

}  // namespace pagedgen
