#include "engine_options.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <optional>
#include <string_view>

#include <fmt/core.h>

#include "chat_template_option.h"
#include "exit_codes.h"
#include "io/json_schema_format.h"
#include "tokenizer/utf8.h"
#include "util/json_quote.h"
#include "kv/kv_cache_manager.h"
#include "util/byte_units.h"
#include "util/error.h"

namespace pagedgen::app {

namespace {

// The text of a constraint flag's file; throws CLI::ValidationError naming the flag.
std::string read_flag_file(const std::string& flag, const std::string& path, std::string_view what) {
  if (std::filesystem::is_directory(path))
    throw CLI::ValidationError(flag, fmt::format("'{}' is a directory: give {}", path, what));
  std::ifstream file(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (!file && !file.eof()) throw CLI::ValidationError(flag, fmt::format("cannot read '{}': give {}", path, what));
  return text;
}

// A constraint flag's response format, checked to compile (a schema compacted first);
// throws CLI::ValidationError naming the flag and `source` (the file, or the value).
ResponseFormat checked_flag_format(const std::string& flag, ResponseFormat format, const std::string& source) {
  try {
    if (format.type == ResponseFormat::Type::kJsonSchema) return json_schema_format(format.spec);
    (void)response_format_grammar(format);
    return format;
  } catch (const Error& e) {
    throw CLI::ValidationError(flag, fmt::format("'{}': {}", source, e.what()));
  } catch (const std::bad_alloc&) {
    throw CLI::ValidationError(flag, fmt::format("'{}': the grammar needs more memory than there is to compile it; "
                                                 "make it smaller",
                                                 source));
  }
}

// The default response format the constraint flags ask for (at most one is given).
std::optional<ResponseFormat> flag_format(const EngineOptions& o) {
  using Type = ResponseFormat::Type;
  if (!o.json_schema_path.empty()) {
    std::string text = read_flag_file("--json-schema", o.json_schema_path, "a JSON Schema file");
    return checked_flag_format("--json-schema", {Type::kJsonSchema, std::move(text)}, o.json_schema_path);
  }
  if (o.json_object) return ResponseFormat{Type::kJsonObject, {}};
  if (!o.regex.empty()) return checked_flag_format("--regex", {Type::kRegex, o.regex}, o.regex);
  if (!o.choices.empty()) {
    std::string spec = "[";
    for (const std::string& choice : o.choices) {
      if (!utf8_is_valid(choice)) throw CLI::ValidationError("--choice", fmt::format("'{}' is not UTF-8", choice));
      spec += (spec.size() > 1 ? "," : "") + json_quote(choice);
    }
    return checked_flag_format("--choice", {Type::kChoice, spec + "]"}, spec + "]");
  }
  if (!o.grammar_path.empty()) {
    std::string text = read_flag_file("--grammar", o.grammar_path, "a GBNF grammar file");
    return checked_flag_format("--grammar", {Type::kGrammar, std::move(text)}, o.grammar_path);
  }
  return std::nullopt;
}

// An integer 0 to 2^64 - 1 as written: CLI11 would wrap -1 and saturate what is too large.
std::string unsigned_64_bit(const std::string& value) {
  uint64_t parsed = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (error == std::errc() && end == value.data() + value.size()) return "";
  return fmt::format("must be an integer from 0 to {}, got '{}'", UINT64_MAX, value);
}

// --json-schema, --json-object, --regex, --choice, --grammar: at most one of them.
void add_constraint_options(CLI::App& cmd, EngineOptions& o) {
  std::vector<CLI::Option*> flags = {
      cmd.add_option("--json-schema", o.json_schema_path,
                     "Constrain every line's output to JSON matching the JSON Schema in this file (compact, keys in "
                     "schema order); a line's own constraint wins")
          ->type_name("FILE"),
      cmd.add_flag("--json-object", o.json_object,
                   "Constrain every line's output to a JSON object; a line's own constraint wins"),
      cmd.add_option("--regex", o.regex,
                     "Constrain every line's output to text the regex matches whole (ECMA-262 subset, as "
                     "guided_regex); a line's own constraint wins"),
      cmd.add_option("--choice", o.choices,
                     "Constrain every line's output to exactly one of these texts (repeat the flag once per "
                     "choice, as guided_choice's list); a line's own constraint wins")
          ->type_name("TEXT"),
      cmd.add_option("--grammar", o.grammar_path,
                     "Constrain every line's output to the GBNF grammar in this file (from its root rule, as "
                     "guided_grammar); a line's own constraint wins")
          ->type_name("FILE"),
  };
  for (CLI::Option* flag : flags)
    for (CLI::Option* other : flags)
      if (other != flag) flag->excludes(other);
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
  add_constraint_options(cmd, o);
  // The defaults are checked as request lines are (sampling_params.h), before any model loads.
  cmd.callback([&o] {
    if (auto format = flag_format(o)) o.sampling.response_format = std::move(*format);
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
