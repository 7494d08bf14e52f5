#include "engine_options.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>

#include <fmt/core.h>

#include "chat_template_option.h"
#include "exit_codes.h"
#include "io/json_schema_format.h"
#include "kv/kv_cache_manager.h"
#include "util/byte_units.h"
#include "util/error.h"

namespace pagedgen::app {

namespace {

// --json-schema's file as a response format; throws CLI::ValidationError naming the flag.
ResponseFormat read_json_schema_flag(const std::string& path) {
  if (std::filesystem::is_directory(path))
    throw CLI::ValidationError("--json-schema", fmt::format("'{}' is a directory: give a JSON Schema file", path));
  std::ifstream file(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (!file && !file.eof())
    throw CLI::ValidationError("--json-schema", fmt::format("cannot read '{}': give a JSON Schema file", path));
  try {
    return json_schema_format(text);
  } catch (const Error& e) {
    throw CLI::ValidationError("--json-schema", fmt::format("'{}': {}", path, e.what()));
  } catch (const std::bad_alloc&) {
    throw CLI::ValidationError("--json-schema", fmt::format("'{}': the schema's grammar needs more memory than "
                                                            "there is to compile it; make it smaller",
                                                            path));
  }
}

// An integer 0 to 2^64 - 1 as written: CLI11 would wrap -1 and saturate what is too large.
std::string unsigned_64_bit(const std::string& value) {
  uint64_t parsed = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (error == std::errc() && end == value.data() + value.size()) return "";
  return fmt::format("must be an integer from 0 to {}, got '{}'", UINT64_MAX, value);
}

}  // namespace

void add_engine_options(CLI::App& cmd, EngineOptions& o) {
  cmd.add_option("--num-blocks", o.num_blocks,
                 "KV pool size in blocks over all layers (overrides --kv-cache-memory); with sliding-window layers "
                 "its bytes are shared among the layer kinds (README: Sliding windows in the paged cache)")
      ->check(CLI::Range(1, INT32_MAX));
  cmd.add_option("--kv-cache-memory", o.kv_cache_memory,
                 "KV pool size in bytes (e.g. 512MiB, 2GiB); default 1GiB on the CPU, on a GPU what "
                 "--gpu-memory-utilization leaves")
      ->check([](const std::string& value) -> std::string {
        try {
          return parse_byte_size(value) > 0 ? "" : "must be more than 0 bytes";
        } catch (const Error& e) {
          return e.what();
        }
      });
  cmd.add_option("--max-num-seqs", o.max_num_seqs, "Sequences decoded at once, at most")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd.add_option("--max-batch-tokens", o.max_batch_tokens,
                 "Tokens computed per step, at most (longer prefills are chunked)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  cmd.add_option("--max-model-len", o.max_model_len,
                 "Prompt + generated tokens per sequence, at most (default, and the most allowed: the model's "
                 "context)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 32));
  cmd.add_flag("--no-prefix-sharing", o.no_prefix_sharing, "Do not share KV blocks between requests (for comparison)");
  cmd.add_flag("--no-overlap", o.no_overlap,
               "Wait for each step's token ids before preparing the next step (for debugging and comparison; the "
               "output and stats are the same)");
  cmd.add_option("--seed", o.seed, "Run seed; a request without its own seed samples from (seed, its id, sample index)")
      ->capture_default_str()
      ->check(unsigned_64_bit);
  add_chat_template_options(cmd, o.chat);
  SamplingParams& s = o.sampling;
  cmd.add_option("--temperature", s.temperature, "Default sampling temperature; 0 is greedy")->capture_default_str();
  cmd.add_option("--top-p", s.top_p, "Default top-p")->capture_default_str();
  cmd.add_option("--top-k", s.top_k, "Default top-k; 0 is off")->capture_default_str();
  cmd.add_option("--min-p", s.min_p, "Default min-p; 0 is off")->capture_default_str();
  cmd.add_option("--max-tokens", s.max_tokens, "Default tokens to generate per sample, at most")->capture_default_str();
  cmd.add_option("--min-tokens", s.min_tokens, "Default tokens to generate before a stop may end a sample")
      ->capture_default_str();
  cmd.add_option("--stop", s.stop, "Default stop string (repeatable)");
  cmd.add_flag("--ignore-eos", s.ignore_eos, "Keep generating past end-of-generation tokens by default");
  cmd.add_option("-n", s.n, "Default samples per prompt")->capture_default_str();
  CLI::Option* schema =
      cmd.add_option("--json-schema", o.json_schema_path,
                     "Constrain every line's output to JSON matching the JSON Schema in this file (compact, keys in "
                     "schema order); a line's own response_format wins")
          ->type_name("FILE");
  cmd.add_flag("--json-object", o.json_object,
               "Constrain every line's output to a JSON object; a line's own response_format wins")
      ->excludes(schema);
  // The defaults are checked as request lines are (sampling_params.h), before any model loads.
  cmd.callback([&o] {
    if (!o.json_schema_path.empty()) o.sampling.response_format = read_json_schema_flag(o.json_schema_path);
    if (o.json_object) o.sampling.response_format = ResponseFormat{ResponseFormat::Type::kJsonObject, {}};
    check_sampling_flags(o.sampling);
  });
}

void check_sampling_flags(const SamplingParams& defaults) {
  try {
    validate(defaults);
  } catch (const Error& e) {
    // "max_tokens must be >= 1, got -1" -> "--max-tokens": "must be >= 1, got -1"
    std::string message = e.what();
    const std::size_t space = message.find(' ');
    std::string field = message.substr(0, std::min(space, message.find('[')));
    std::ranges::replace(field, '_', '-');
    throw CLI::ValidationError(field == "n" ? "-n" : "--" + field, message.substr(space + 1));
  }
}

KvPoolBudget kv_pool_budget(const EngineOptions& options, double gpu_memory_utilization) {
  KvPoolBudget budget;
  if (options.num_blocks > 0) budget.num_blocks = options.num_blocks;
  if (!options.kv_cache_memory.empty()) budget.bytes = parse_byte_size(options.kv_cache_memory);
  budget.device_memory_fraction = gpu_memory_utilization;
  return budget;
}

std::string describe_kv_pool_budget(const EngineOptions& options, double gpu_memory_utilization, bool on_gpu) {
  if (options.num_blocks > 0) return fmt::format("{} blocks", options.num_blocks);
  if (!options.kv_cache_memory.empty()) return options.kv_cache_memory;
  if (on_gpu) return fmt::format("what {} of the GPU's memory leaves", gpu_memory_utilization);
  return format_bytes(KvPoolBudget::kDefaultHostBytes) + " (default)";
}

void add_block_size_option(CLI::App& command, int32_t& block_size) {
  command.add_option("--block-size", block_size, "Tokens per KV block")
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxBlockSize));
}

void add_block_sizes_option(CLI::App& command, std::vector<int32_t>& block_sizes) {
  command.add_option("--block-sizes", block_sizes, "Block sizes, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxBlockSize));
}

int64_t effective_max_model_len(const EngineOptions& options, int64_t context_length) {
  if (options.max_model_len > context_length)
    throw UsageError(fmt::format("--max-model-len {} is above the model's context of {} tokens; give at most {}",
                                 options.max_model_len, context_length, context_length));
  return options.max_model_len > 0 ? options.max_model_len : context_length;
}

EngineConfig make_engine_config(const EngineOptions& options, int32_t block_size, int32_t num_blocks,
                                int64_t max_model_len) {
  EngineConfig config;
  config.block_size = block_size;
  config.num_blocks = num_blocks;
  config.max_num_seqs = options.max_num_seqs;
  config.max_batch_tokens = options.max_batch_tokens;
  config.prefix_sharing = !options.no_prefix_sharing;
  config.overlap = !options.no_overlap;
  config.max_model_len = max_model_len;
  config.run_seed = options.seed;
  return config;
}

}  // namespace pagedgen::app
