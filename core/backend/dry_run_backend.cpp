#include "backend/dry_run_backend.h"

#include "util/error.h"

namespace pagedgen {

DryRunBackend::DryRunBackend(std::size_t kv_bytes_per_token, std::span<const KvKind> kinds)
    : kv_bytes_per_token_(kv_bytes_per_token) {
  int64_t num_layers = 0;
  for (const KvKind& kind : kinds) num_layers += kind.num_layers;
  PG_CHECK(!kinds.empty() && num_layers > 0 && kinds.front().window == 0, "layer kinds of {} layers", num_layers);
  for (const KvKind& kind : kinds) {
    windows_.push_back(kind.window);
    kind_bytes_per_token_.push_back(kv_bytes_per_token / static_cast<std::size_t>(num_layers) *
                                    static_cast<std::size_t>(kind.num_layers));
  }
}

DryRunBackend::DryRunBackend(const Backend& sizing)
    : kv_bytes_per_token_(sizing.kv_bytes_per_block(1)), windows_(sizing.kv_kind_windows()) {
  for (std::size_t kind = 0; kind < windows_.size(); ++kind)
    kind_bytes_per_token_.push_back(sizing.kv_kind_bytes_per_block(static_cast<KvKindId>(kind), 1));
}

std::vector<SampledToken> DryRunBackend::step(const StepBatch&, const SamplingBatch& sampling) {
  // -1, -2, ...: distinct for the first 2^30 tokens of a run, then they repeat.
  std::vector<SampledToken> tokens;
  tokens.reserve(sampling.rows.size() + sampling.prompt_rows.size());
  for (std::size_t i = 0; i < sampling.rows.size(); ++i)
    tokens.push_back({-1 - static_cast<TokenId>(num_sampled_++ % (uint64_t{1} << 30)), std::nullopt});
  // Prompt rows (prompt_logprobs) are scheduled as in a real run, so their chunks and
  // blocks are planned alike; their values are not computed (zeros).
  for (const PromptLogprobRow& row : sampling.prompt_rows) tokens.push_back({row.token, TokenLogprobs{}});
  return tokens;
}

}  // namespace pagedgen
