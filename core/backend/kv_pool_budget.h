// How big the KV pool may be, as the run's settings say it: a number of blocks, a number of
// bytes, or (on a device) the fraction of device memory to fill. Each backend answers in
// blocks (Backend::kv_pool_blocks), since only it knows its KV dtype and free memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace pagedgen {

struct KvPoolBudget {
  static constexpr uint64_t kDefaultHostBytes = uint64_t{1} << 30;  // 1 GiB when nothing is given on the CPU

  std::optional<int32_t> num_blocks;     // exactly this many blocks (setting "num_blocks")
  std::optional<uint64_t> bytes;         // else this many bytes of K and V ("kv_cache_memory")
  double device_memory_fraction = 0.9;   // else, on a device: fill it to this fraction ("gpu_memory_utilization")
};

// The blocks of `bytes_per_block` that fit in `bytes`; throws SettingError (kv_cache_memory)
// when not even one does.
int32_t num_blocks_in(uint64_t bytes, std::size_t bytes_per_block, std::size_t block_size);

// The blocks of a budget on a host backend: num_blocks, else bytes, else kDefaultHostBytes.
int32_t host_pool_blocks(const KvPoolBudget& budget, std::size_t bytes_per_block, std::size_t block_size);

}  // namespace pagedgen
