// Logits rows and sampling parameters for the tests that hold a sampler to the CPU
// Sampler (test_radix_select, test_gpu_sampler): LLM-like, flat, tied, peaked rows, rows
// with -inf runs or a single finite token, rows no sampler can use; random mixes of
// greedy, temperature, top-k, top-p, min-p and min_tokens masking.
#pragma once

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "sample/sampling_params.h"

namespace pagedgen::test {

enum class RowKind { typical, flat, ties, minus_inf_runs, peaked, one_finite, nan, plus_inf, all_minus_inf };
inline constexpr int kNumRowKinds = 9;

// End-of-generation ids the rows are sampled with (masked before min_tokens).
inline const std::vector<TokenId> kEndOfGeneration = {2, 7};

inline std::vector<float> make_logits_row(std::size_t vocab, RowKind kind, std::mt19937_64& gen) {
  std::vector<float> logits(vocab);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 3);
  const std::size_t chosen = gen() % vocab;
  for (std::size_t i = 0; i < vocab; ++i) {
    switch (kind) {
      case RowKind::typical:
        logits[i] = 3.0f * normal(gen);
        break;
      case RowKind::flat:
        logits[i] = 1e-4f * normal(gen);
        break;
      case RowKind::ties:
        logits[i] = static_cast<float>(small(gen));
        break;
      case RowKind::minus_inf_runs:
        logits[i] = i % 3 == 0 ? -INFINITY : 8.0f * normal(gen);
        break;
      case RowKind::peaked:
        logits[i] = i == chosen ? 40.0f : normal(gen);
        break;
      case RowKind::one_finite:
        logits[i] = i == chosen ? -3.0f : -INFINITY;
        break;
      case RowKind::nan:
        logits[i] = i == chosen ? NAN : normal(gen);
        break;
      case RowKind::plus_inf:
        logits[i] = i == chosen ? INFINITY : normal(gen);
        break;
      case RowKind::all_minus_inf:
        logits[i] = -INFINITY;
        break;
    }
  }
  return logits;
}

inline SamplingParams random_sampling_params(std::mt19937_64& gen) {
  std::uniform_int_distribution<int> pick(0, 9);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  SamplingParams params;
  params.temperature = pick(gen) == 0 ? 0.0 : pick(gen) == 0 ? 1e-3 : 0.2 + 2.0 * unit(gen);
  if (pick(gen) < 4) params.top_k = 1 + static_cast<int32_t>(unit(gen) * (pick(gen) < 5 ? 50 : 5000));
  if (pick(gen) < 4) params.top_p = pick(gen) == 0 ? 1e-9 : 0.05 + 0.95 * unit(gen);
  if (pick(gen) < 3) params.min_p = pick(gen) == 0 ? 1.0 : 0.3 * unit(gen);
  if (pick(gen) < 3) {
    params.min_tokens = 4;
    params.stop_token_ids = {5, 0, 5};
    params.ignore_eos = pick(gen) == 0;
  }
  return params;
}

}  // namespace pagedgen::test
