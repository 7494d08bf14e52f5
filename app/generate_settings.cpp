#include "generate_settings.h"

#include <fmt/core.h>

#include <algorithm>
#include <iterator>

#include "chat_template_option.h"
#include "io/chat_template_kwargs.h"
#include "util/file_fingerprint.h"
#include "util/fnv_hash.h"
#include "util/json_quote.h"

namespace pagedgen::app {

namespace {

using Value = std::optional<std::string>;

// --json-schema, --json-object, --regex, --choice or --grammar as a manifest setting: the
// format and, but for json_object, the size and FNV-1a hash of its text (the compact schema,
// the pattern, the choices as a JSON array, the grammar; where a file is does not matter).
std::string response_format_setting(const ResponseFormat& format) {
  if (format.spec.empty()) return std::string(response_format_type_name(format.type));
  return fmt::format("{} bytes={} fnv1a64={:016x}", response_format_type_name(format.type), format.spec.size(),
                     fnv1a_bytes(kFnvOffsetBasis, format.spec));
}

std::string stop_strings(const std::vector<std::string>& stops) {
  std::string list = "[";
  for (const std::string& stop : stops) list += (list.size() > 1 ? "," : "") + json_quote(stop);
  return list + "]";
}

// A row whose value is one field of the options, formatted as fmt does.
template <typename Field>
ManifestSetting field_row(std::string_view key, std::string_view flag, Field field) {
  return {key, {flag}, [field](const GenerateOptions& o, const std::filesystem::path&) -> Value {
            return fmt::format("{}", field(o));
          }};
}

// Rows added after the first manifests: recorded only when set, so that older manifests
// still match.
std::vector<ManifestSetting> rows_recorded_when_set() {
  return {
      {"response_format",
       {"--json-schema", "--json-object", "--regex", "--choice", "--grammar"},
       [](const GenerateOptions& o, const std::filesystem::path&) -> Value {
         const ResponseFormat& format = o.engine.sampling.response_format;
         return format.is_constrained() ? Value(response_format_setting(format)) : std::nullopt;
       }},
      // Dummy weights' text is the tokenizer's; a GPU pool's size decides the prefix-cache hits.
      {"tokenizer",
       {"--tokenizer"},
       [](const GenerateOptions& o, const std::filesystem::path&) -> Value {
         return o.backend.tokenizer.empty() ? std::nullopt : Value(fingerprint_model(o.backend.tokenizer));
       }},
      {"gpu_memory_utilization",
       {"--gpu-memory-utilization"},
       [](const GenerateOptions& o, const std::filesystem::path&) -> Value {
         const double utilization = o.backend.gpu_memory_utilization;
         return utilization == BackendOptions{}.gpu_memory_utilization ? std::nullopt
                                                                       : Value(fmt::format("{}", utilization));
       }},
      // The date strftime_now gave (run_generate sets it: pinned, resumed, or today).
      {"chat_template_date",
       {"--chat-template-date"},
       [](const GenerateOptions& o, const std::filesystem::path&) -> Value {
         return o.engine.chat.date.empty() ? std::nullopt : Value(o.engine.chat.date);
       }},
      {"chat_template_kwargs",
       {"--chat-template-kwargs"},
       [](const GenerateOptions& o, const std::filesystem::path&) -> Value {
         if (o.engine.chat.kwargs.empty()) return std::nullopt;
         return format_chat_template_kwargs(parse_chat_template_kwargs(o.engine.chat.kwargs));
       }},
  };
}

std::vector<ManifestSetting> make_manifest_table() {
  const auto sampling = [](const GenerateOptions& o) -> const SamplingParams& { return o.engine.sampling; };
  std::vector<ManifestSetting> rows = {
      {"model",
       {"--model"},
       [](const GenerateOptions&, const std::filesystem::path& path) -> Value { return fingerprint_model(path); }},
      field_row("format", "--format", [](const GenerateOptions& o) { return o.format; }),
      field_row("chat_template", "--chat-template",
                [](const GenerateOptions& o) { return chat_template_setting(o.engine.chat.chat_template); }),
      field_row("seed", "--seed", [](const GenerateOptions& o) { return o.engine.seed; }),
      field_row("temperature", "--temperature", [=](const GenerateOptions& o) { return sampling(o).temperature; }),
      field_row("top_p", "--top-p", [=](const GenerateOptions& o) { return sampling(o).top_p; }),
      field_row("top_k", "--top-k", [=](const GenerateOptions& o) { return sampling(o).top_k; }),
      field_row("min_p", "--min-p", [=](const GenerateOptions& o) { return sampling(o).min_p; }),
      field_row("max_tokens", "--max-tokens", [=](const GenerateOptions& o) { return sampling(o).max_tokens; }),
      field_row("min_tokens", "--min-tokens", [=](const GenerateOptions& o) { return sampling(o).min_tokens; }),
      field_row("stop", "--stop", [=](const GenerateOptions& o) { return stop_strings(sampling(o).stop); }),
      field_row("ignore_eos", "--ignore-eos", [=](const GenerateOptions& o) { return sampling(o).ignore_eos; }),
      field_row("n", "-n", [=](const GenerateOptions& o) { return sampling(o).n; }),
      field_row("max_model_len", "--max-model-len", [](const GenerateOptions& o) { return o.engine.max_model_len; }),
      // The engine settings change no text, but the prefix-cache hits (cached_tokens) in it.
      field_row("block_size", "--block-size", [](const GenerateOptions& o) { return o.block_size; }),
      field_row("num_blocks", "--num-blocks", [](const GenerateOptions& o) { return o.engine.num_blocks; }),
      field_row("kv_cache_memory", "--kv-cache-memory",
                [](const GenerateOptions& o) { return o.engine.kv_cache_memory; }),
      field_row("max_num_seqs", "--max-num-seqs", [](const GenerateOptions& o) { return o.engine.max_num_seqs; }),
      field_row("max_batch_tokens", "--max-batch-tokens",
                [](const GenerateOptions& o) { return o.engine.max_batch_tokens; }),
      field_row("prefix_sharing", "--no-prefix-sharing",
                [](const GenerateOptions& o) { return !o.engine.no_prefix_sharing; }),
      field_row("plan_window", "--plan-window", [](const GenerateOptions& o) { return o.plan_window; }),
      // The backend: GPU sums round differently from the CPU's, and dtypes differ more.
      field_row("device", "--device", [](const GenerateOptions& o) { return o.backend.device; }),
      field_row("dtype", "--dtype", [](const GenerateOptions& o) { return o.backend.dtype; }),
      field_row("cpu_math", "--cpu-math", [](const GenerateOptions& o) { return o.backend.cpu_math; }),
      field_row("kv_cache_dtype", "--kv-cache-dtype",
                [](const GenerateOptions& o) { return o.backend.kv_cache_dtype; }),
      field_row("load_format", "--load-format", [](const GenerateOptions& o) { return o.backend.load_format; }),
      field_row("shard", "--shard", [](const GenerateOptions& o) { return o.shard; }),
  };
  std::ranges::move(rows_recorded_when_set(), std::back_inserter(rows));
  return rows;
}

constexpr UnrecordedFlag kUnrecordedFlags[] = {
    {"--input", "the job records the input's own fingerprint, whatever its name"},
    {"--output", "the manifest sits beside the output it describes"},
    {"--resume", "it asks for the check the manifest is for"},
    {"--stats", "the stats file is written after the output, from the same run"},
    {"--report", "the report is written after the output, from the same run"},
    {"--fsync-interval", "when lines reach the disk, not what they hold"},
    {"--quiet", "stderr only"},
    {"--progress-interval", "stderr only"},
    {"--threads", "the CPU's sums do not depend on the thread count"},
    {"--cpu-isa", "every instruction set gives the fast path's same bits"},
    {"--no-overlap", "the overlap changes when ids are read, not which"},
    {"--no-cuda-graphs", "a graph replays the same kernels"},
};

}  // namespace

const std::vector<ManifestSetting>& manifest_table() {
  static const std::vector<ManifestSetting> table = make_manifest_table();
  return table;
}

std::span<const UnrecordedFlag> unrecorded_flags() { return kUnrecordedFlags; }

std::vector<std::pair<std::string, std::string>> manifest_settings(const GenerateOptions& options,
                                                                   const std::filesystem::path& model_path) {
  std::vector<std::pair<std::string, std::string>> settings;
  for (const ManifestSetting& row : manifest_table())
    if (std::optional<std::string> value = row.value(options, model_path))
      settings.emplace_back(std::string(row.key), std::move(*value));
  return settings;
}

}  // namespace pagedgen::app
