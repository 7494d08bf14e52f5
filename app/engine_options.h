// The engine and sampling flags shared by `generate`, `sweep`, `plan` and `complete`, and
// what they turn into: a KV pool budget and an EngineConfig.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/kv_pool_budget.h"
#include "chat_template_option.h"
#include "engine/engine.h"
#include "sample/sampling_params.h"

namespace pagedgen::app {

struct EngineOptions {
  int32_t num_blocks = 0;
  std::string kv_cache_memory;                         // empty: the backend's default (kv_pool_budget.h)
  int32_t max_num_seqs = EngineConfig{}.max_num_seqs;  // core's defaults (sched/scheduler.h)
  int32_t max_batch_tokens = EngineConfig{}.max_batch_tokens;
  int64_t max_model_len = 0;  // 0: the model's context
  bool no_prefix_sharing = false;
  bool no_overlap = false;  // --no-overlap: wait for each step's ids before preparing the next
  uint64_t seed = 0;
  ChatTemplateOptions chat;          // --chat-template, --chat-template-date, --chat-template-kwargs
  std::string json_schema_path;      // --json-schema: every line's default response format
  bool json_object = false;          // --json-object
  std::string regex;                 // --regex
  std::vector<std::string> choices;  // --choice, repeated
  std::string grammar_path;          // --grammar (GBNF)
  SamplingParams sampling;  // the defaults of lines that do not set a field (response_format from the flags above)
};

// --num-blocks, --kv-cache-memory, --max-num-seqs, --max-batch-tokens, --max-model-len,
// --no-prefix-sharing, --no-overlap, --seed, the chat-template flags, the default sampling
// flags and the default response format (--json-schema FILE, --json-object, --regex,
// --choice, --grammar FILE, one of them). A constraint the grammar refuses, or a file it
// cannot read, fails the parse naming the flag (exit code 2).
void add_engine_options(CLI::App& command, EngineOptions& options);

// Throws CLI::ValidationError naming the flag when the default sampling flags are out of
// range (the same rules as request lines: sample/sampling_params.h).
void check_sampling_flags(const SamplingParams& defaults);

// The pool the flags ask for: --num-blocks, else --kv-cache-memory, else the backend's
// default (on a GPU, --gpu-memory-utilization of its memory).
KvPoolBudget kv_pool_budget(const EngineOptions& options, double gpu_memory_utilization);

// The budget in words, for tables: "12 blocks", "512MiB", "1GiB (default)", or on a GPU
// "0.9 of the GPU's memory".
std::string describe_kv_pool_budget(const EngineOptions& options, double gpu_memory_utilization, bool on_gpu);

// --block-size (one size) or --block-sizes (a list), checked against the KV cache's range.
void add_block_size_option(CLI::App& command, int32_t& block_size);
void add_block_sizes_option(CLI::App& command, std::vector<int32_t>& block_sizes);

// The model's context, or --max-model-len when it is smaller; throws UsageError when it is
// larger (exit 2, naming both numbers).
int64_t effective_max_model_len(const EngineOptions& options, int64_t context_length);

EngineConfig make_engine_config(const EngineOptions& options, int32_t block_size, int32_t num_blocks,
                                int64_t max_model_len);

}  // namespace pagedgen::app
