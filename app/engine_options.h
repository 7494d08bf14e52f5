// The engine and sampling flags shared by `generate`, `sweep` and `plan`, and what they
// turn into: the KV pool size in blocks and an EngineConfig.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "engine/engine.h"
#include "sample/sampling_params.h"

namespace pagedgen::app {

struct EngineOptions {
  int32_t num_blocks = 0;
  std::string kv_cache_memory;  // empty: 1GiB, or on a GPU what --gpu-memory-utilization leaves
  int32_t max_num_seqs = 64;
  int32_t max_batch_tokens = 2048;
  int64_t max_model_len = 0;  // 0: the model's context
  bool no_prefix_sharing = false;
  uint64_t seed = 0;
  std::string chat_template;
  SamplingParams sampling = [] {
    SamplingParams p;
    p.max_tokens = 128;
    return p;
  }();
};

// --num-blocks, --kv-cache-memory, --max-num-seqs, --max-batch-tokens, --max-model-len,
// --no-prefix-sharing, --seed, --chat-template and the default sampling flags.
void add_engine_options(CLI::App& command, EngineOptions& options);

// --kv-cache-memory as given, else the default "1GiB" (the CUDA backend sizes its pool
// from --gpu-memory-utilization instead when none was given).
std::string kv_cache_memory_or_default(const EngineOptions& options);

// The pool in blocks: --num-blocks, else --kv-cache-memory (default 1GiB) over the bytes of
// one block.
int32_t pool_blocks(const EngineOptions& options, int32_t block_size, std::size_t bytes_per_block);

// The model's context, or --max-model-len when it is smaller.
int64_t effective_max_model_len(const EngineOptions& options, int64_t context_length);

EngineConfig make_engine_config(const EngineOptions& options, int32_t block_size, int32_t num_blocks,
                                int64_t max_model_len);

}  // namespace pagedgen::app
