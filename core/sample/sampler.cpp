#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "util/error.h"

namespace pagedgen {

namespace {

// Smallest chunk ensure_sorted sorts at once: most of the mass of a trained model's
// distribution sits in its first few dozen tokens.
constexpr std::size_t kMinSortChunk = 64;

bool is_masked(std::span<const TokenId> masked, std::size_t& cursor, TokenId id) {
  while (cursor < masked.size() && masked[cursor] < id) ++cursor;
  return cursor < masked.size() && masked[cursor] == id;
}

}  // namespace

TokenId Sampler::sample(std::span<const float> logits, const SamplingParams& params,
                        int32_t num_generated, std::span<const TokenId> end_of_generation,
                        Rng& rng) {
  PG_CHECK(!logits.empty(), "empty logits row");
  masked_.clear();
  if (num_generated < params.min_tokens) {
    masked_.insert(masked_.end(), params.stop_token_ids.begin(), params.stop_token_ids.end());
    if (!params.ignore_eos)
      masked_.insert(masked_.end(), end_of_generation.begin(), end_of_generation.end());
    std::sort(masked_.begin(), masked_.end());
    masked_.erase(std::unique(masked_.begin(), masked_.end()), masked_.end());
  }
  if (params.is_greedy()) {
    std::optional<TokenId> best;
    std::size_t cursor = 0;
    for (std::size_t i = 0; i < logits.size(); ++i) {
      const float logit = logits[i];
      PG_CHECK(!std::isnan(logit) && logit != std::numeric_limits<float>::infinity(),
               "logit {} of token {} (must be finite or -inf)", logit, i);
      const auto id = static_cast<TokenId>(i);
      if (is_masked(masked_, cursor, id)) continue;
      if (!best || logit > logits[*best]) best = id;  // strict: the lowest id wins ties
    }
    PG_CHECK(best && logits[*best] != -std::numeric_limits<float>::infinity(),
             "every token is masked or has logit -inf");
    return *best;
  }
  return sample_random(logits, params, rng);
}

TokenId Sampler::sample_random(std::span<const float> logits, const SamplingParams& params,
                               Rng& rng) {
  // 1-2: weights relative to the best unmasked logit.
  std::optional<float> max_logit;
  std::size_t cursor = 0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const float logit = logits[i];
    PG_CHECK(!std::isnan(logit) && logit != std::numeric_limits<float>::infinity(),
             "logit {} of token {} (must be finite or -inf)", logit, i);
    if (is_masked(masked_, cursor, static_cast<TokenId>(i))) continue;
    if (!max_logit || logit > *max_logit) max_logit = logit;
  }
  PG_CHECK(max_logit && *max_logit != -std::numeric_limits<float>::infinity(),
           "every token is masked or has logit -inf");
  const double max_value = *max_logit;
  candidates_.clear();
  num_sorted_ = 0;
  cursor = 0;
  double total = 0.0;  // id-order sum of all weights
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const auto id = static_cast<TokenId>(i);
    if (is_masked(masked_, cursor, id)) continue;
    const double weight = std::exp((static_cast<double>(logits[i]) - max_value) / params.temperature);
    if (weight > 0.0) {
      candidates_.push_back({weight, id});
      total += weight;
    }
  }

  // 4-6: truncation keeps a prefix [0, num_kept) of the sorted order.
  std::size_t num_kept = candidates_.size();
  bool truncated = false;
  auto prefix_sum = [&](std::size_t count) {
    ensure_sorted(count);
    double sum = 0.0;
    for (std::size_t j = 0; j < count; ++j) sum += candidates_[j].weight;
    return sum;
  };
  if (params.top_k > 0 && static_cast<std::size_t>(params.top_k) < num_kept) {
    num_kept = static_cast<std::size_t>(params.top_k);
    truncated = true;
  }
  if (params.top_p < 1.0) {
    const double threshold = params.top_p * (truncated ? prefix_sum(num_kept) : total);
    double running = 0.0;
    for (std::size_t j = 0; j < num_kept; ++j) {
      ensure_sorted(j + 1);
      running += candidates_[j].weight;
      if (running >= threshold) {
        if (j + 1 < num_kept) {
          num_kept = j + 1;
          truncated = true;
        }
        break;
      }
    }
  }
  if (params.min_p > 0.0) {
    for (std::size_t j = 1; j < num_kept; ++j) {  // j = 0 weighs 1 >= min_p
      ensure_sorted(j + 1);
      if (candidates_[j].weight < params.min_p) {
        num_kept = j;
        truncated = true;
        break;
      }
    }
  }

  // 7: inverse CDF over the kept prefix.
  const double kept_total = truncated ? prefix_sum(num_kept) : total;
  const double target = rng.uniform_double() * kept_total;
  double running = 0.0;
  for (std::size_t j = 0; j < num_kept; ++j) {
    ensure_sorted(j + 1);
    running += candidates_[j].weight;
    if (target < running) return candidates_[j].id;
  }
  ensure_sorted(num_kept);
  return candidates_[num_kept - 1].id;
}

// Extends the sorted prefix to at least `count` candidates, in chunks that at least double,
// so a walk down the order costs O(V log V) at worst and O(V) when it stops early.
void Sampler::ensure_sorted(std::size_t count) {
  if (count <= num_sorted_) return;
  const auto before = [](const Candidate& a, const Candidate& b) {
    return a.weight > b.weight || (a.weight == b.weight && a.id < b.id);
  };
  const std::size_t target =
      std::min(candidates_.size(), std::max({count, 2 * num_sorted_, kMinSortChunk}));
  const auto first = candidates_.begin() + static_cast<std::ptrdiff_t>(num_sorted_);
  const auto middle = candidates_.begin() + static_cast<std::ptrdiff_t>(target);
  // Everything past num_sorted_ already orders after the sorted prefix (earlier
  // nth_element calls partitioned it), so selecting within the tail is enough.
  if (middle != candidates_.end()) std::nth_element(first, middle, candidates_.end(), before);
  std::sort(first, middle, before);
  num_sorted_ = target;
}

}  // namespace pagedgen
