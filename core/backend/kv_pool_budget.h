// How big the KV pool may be, as the run's settings say it: a number of blocks, a number of
// bytes, or (on a device) the fraction of device memory to fill. Each backend answers in
// blocks (Backend::kv_pool_blocks), since only it knows its KV dtype and free memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace pagedgen {

struct KvPoolBudget {
  static constexpr uint64_t kDefaultHostBytes = uint64_t{1} << 30;  // 1 GiB when nothing is given on the CPU

  std::optional<int32_t> num_blocks;    // exactly this many blocks (setting "num_blocks")
  std::optional<uint64_t> bytes;        // else this many bytes of K and V ("kv_cache_memory")
  double device_memory_fraction = 0.9;  // else, on a device: fill it to this fraction ("gpu_memory_utilization")
};

// The blocks of `bytes_per_block` that fit in `bytes`; throws SettingError (kv_cache_memory)
// when not even one does.
int32_t num_blocks_in(uint64_t bytes, std::size_t bytes_per_block, std::size_t block_size);

// The blocks of a budget on a host backend: num_blocks, else bytes, else kDefaultHostBytes.
int32_t host_pool_blocks(const KvPoolBudget& budget, std::size_t bytes_per_block, std::size_t block_size);

// A pool of num_blocks blocks over all layers (what a budget gives, Backend::kv_pool_blocks)
// shared among the layer kinds (step/kv_kinds.h) by bytes: each window kind gets, when it
// is less than num_blocks, the most blocks its layers can be holding at once,
//   max_num_seqs * (ceil((window - 1) / block_size) + 2) + ceil(max_batch_tokens / block_size)
// (a running sequence holds the blocks touching its window and its chunk of the step; a
// chunk of n tokens touches at most ceil(n / block_size) + 1 blocks), else num_blocks; kind 0
// gets the bytes left, so at least num_blocks. `windows` and `kind_bytes_per_block` are per
// kind, kind 0 (window 0) first; one kind gets num_blocks.
std::vector<int32_t> split_kv_pool(int32_t num_blocks, std::size_t bytes_per_block, std::span<const int32_t> windows,
                                   std::span<const std::size_t> kind_bytes_per_block, int32_t block_size,
                                   int32_t max_num_seqs, int32_t max_batch_tokens);

}  // namespace pagedgen
