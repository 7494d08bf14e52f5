#include "backend/dry_run_backend.h"

namespace pagedgen {

std::vector<SampledToken> DryRunBackend::step(const StepBatch&, const SamplingBatch& sampling) {
  // -1, -2, ...: distinct for the first 2^30 tokens of a run, then they repeat.
  std::vector<SampledToken> tokens;
  tokens.reserve(sampling.rows.size());
  for (std::size_t i = 0; i < sampling.rows.size(); ++i)
    tokens.push_back({-1 - static_cast<TokenId>(num_sampled_++ % (uint64_t{1} << 30)), std::nullopt});
  return tokens;
}

}  // namespace pagedgen
