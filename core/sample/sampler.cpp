#include "sample/sampler.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <optional>

#include "sample/bad_words.h"
#include "sample/sampling_math.h"
#include "util/error.h"

namespace pagedgen {

namespace {

// Below this many candidates, select_by_mass sorts instead of partitioning.
constexpr std::size_t kSortRange = 32;

bool comes_before(const auto& a, const auto& b) {
  return sampling::sort_key(a.weight, a.id) > sampling::sort_key(b.weight, b.id);
}

// Whether token i is outside a grammar's allowed-token mask (none: every token is in).
bool outside(std::span<const uint32_t> allowed_tokens, std::size_t i) {
  if (allowed_tokens.empty()) return false;
  return i / 32 >= allowed_tokens.size() || ((allowed_tokens[i / 32] >> (i % 32)) & 1u) == 0;
}

// Index of the best unmasked logit (lowest id on ties); nullopt when the row is not
// usable: a NaN or +inf anywhere, or no unmasked logit above -inf.
std::optional<std::size_t> argmax(std::span<const float> logits, std::span<const TokenId> masked,
                                  std::span<const uint32_t> allowed_tokens) {
  std::optional<std::size_t> best;
  std::size_t next_masked = 0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (sampling::breaks_row(logits[i])) return std::nullopt;
    if (next_masked < masked.size() && static_cast<std::size_t>(masked[next_masked]) == i) {
      ++next_masked;
      continue;
    }
    if (outside(allowed_tokens, i)) continue;
    if (!best || logits[i] > logits[*best]) best = i;
  }
  if (!best || logits[*best] == -INFINITY) return std::nullopt;
  return best;
}

}  // namespace

void masked_ids(const SamplingParams& params, std::span<const TokenId> tokens, int32_t num_generated,
                std::span<const TokenId> end_of_generation, std::size_t vocab_size, std::vector<TokenId>& masked) {
  masked.clear();
  if (num_generated < params.min_tokens) {
    masked.insert(masked.end(), params.stop_token_ids.begin(), params.stop_token_ids.end());
    if (!params.ignore_eos) masked.insert(masked.end(), end_of_generation.begin(), end_of_generation.end());
  }
  if (params.bans_after_tokens()) {
    PG_CHECK(num_generated >= 0 && static_cast<std::size_t>(num_generated) <= tokens.size(),
             "{} generated tokens in a sequence of {}", num_generated, tokens.size());
    append_banned_tokens(params.bad_words_ids, tokens.last(static_cast<std::size_t>(num_generated)), masked);
  } else {
    append_banned_tokens(params.bad_words_ids, {}, masked);  // one-token words read no tokens
  }
  std::erase_if(masked, [&](TokenId id) { return id < 0 || static_cast<std::size_t>(id) >= vocab_size; });
  std::sort(masked.begin(), masked.end());
  masked.erase(std::unique(masked.begin(), masked.end()), masked.end());
}

bool masks_leave_a_token(const SamplingRow& row, std::span<const TokenId> end_of_generation, std::size_t vocab_size) {
  std::vector<TokenId> masked;
  masked_ids(*row.params, row.tokens, row.num_generated, end_of_generation, vocab_size, masked);
  std::size_t next_masked = 0;
  for (std::size_t i = 0; i < vocab_size; ++i) {
    if (next_masked < masked.size() && static_cast<std::size_t>(masked[next_masked]) == i) {
      ++next_masked;
      continue;
    }
    if (!outside(row.allowed_tokens, i)) return true;
  }
  return false;
}

std::optional<TokenId> Sampler::sample(std::span<const float> logits, const SamplingParams& params,
                                       int32_t num_generated, std::span<const TokenId> end_of_generation, Rng& rng,
                                       std::span<const uint32_t> allowed_tokens) {
  return sample(logits, params, num_generated, end_of_generation, params.is_greedy() ? 0 : rng.next_u64(),
                allowed_tokens);
}

std::optional<TokenId> Sampler::sample(std::span<const float> logits, const SamplingParams& params,
                                       int32_t num_generated, std::span<const TokenId> end_of_generation,
                                       uint64_t random_bits, std::span<const uint32_t> allowed_tokens) {
  PG_CHECK(!params.has_penalties() && !params.bans_after_tokens(),
           "penalties or bad words without the sample's tokens");
  return sample(logits, SamplingRow{0, &params, num_generated, random_bits, allowed_tokens, {}}, end_of_generation);
}

std::optional<TokenId> Sampler::sample(std::span<const float> model_logits, const SamplingRow& row,
                                       std::span<const TokenId> end_of_generation) {
  const SamplingParams& params = *row.params;
  PG_CHECK(!model_logits.empty() && model_logits.size() <= static_cast<std::size_t>(sampling::kMaxVocabSize),
           "logits row of {} tokens (the sampler takes 1 to {})", model_logits.size(), sampling::kMaxVocabSize);
  PG_CHECK(row.allowed_tokens.size() <= (model_logits.size() + 31) / 32, "a mask of {} words for {} logits",
           row.allowed_tokens.size(), model_logits.size());
  const std::span<const uint32_t> allowed_tokens = row.allowed_tokens;
  const int32_t num_generated = row.num_generated;
  const std::span<const float> logits =
      params.has_penalties() ? penalizer_.apply(model_logits, params, row.tokens, num_generated) : model_logits;
  masked_ids(params, row.tokens, num_generated, end_of_generation, logits.size(), masked_);
  const std::optional<std::size_t> best = argmax(logits, masked_, allowed_tokens);
  if (!best) return std::nullopt;
  if (params.is_greedy()) return static_cast<TokenId>(*best);
  return sample_random(logits, params, logits[*best], row.random_bits, allowed_tokens);
}

TokenId Sampler::sample_random(std::span<const float> logits, const SamplingParams& params, float max_logit,
                               uint64_t random_bits, std::span<const uint32_t> allowed_tokens) {
  // 1-2: fixed-point weights relative to the best unmasked logit.
  const double inverse_temperature = sampling::inverse_temperature(params.temperature);
  candidates_.clear();
  std::size_t next_masked = 0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (next_masked < masked_.size() && static_cast<std::size_t>(masked_[next_masked]) == i) {
      ++next_masked;
      continue;
    }
    if (outside(allowed_tokens, i)) continue;
    const uint64_t weight = sampling::weight(logits[i], max_logit, inverse_temperature);
    if (weight > 0) candidates_.push_back({weight, static_cast<TokenId>(i)});
  }
  const auto before = [](const Candidate& a, const Candidate& b) { return comes_before(a, b); };

  // 4: top-k.
  if (params.top_k > 0 && static_cast<std::size_t>(params.top_k) < candidates_.size()) {
    const auto kth = candidates_.begin() + params.top_k;
    std::nth_element(candidates_.begin(), kth, candidates_.end(), before);
    candidates_.erase(kth, candidates_.end());
  }
  // 5: top-p. The token holding mass position need - 1 is the last one kept.
  if (params.top_p < 1.0) {
    const Candidate last = select_by_mass(sampling::top_p_last_position(params.top_p, total_weight()));
    std::erase_if(candidates_, [&](const Candidate& c) { return comes_before(last, c); });
  }
  // 6: min-p, a threshold on the weight (the best weighs exactly 2^44 and stays).
  if (params.min_p > 0.0) {
    const uint64_t least = sampling::min_p_weight(params.min_p);
    std::erase_if(candidates_, [&](const Candidate& c) { return c.weight < least; });
  }
  // 7: one draw, inverse CDF in exact integers.
  return select_by_mass(sampling::draw_target(random_bits, total_weight())).id;
}

uint64_t Sampler::total_weight() const {
  uint64_t total = 0;
  for (const Candidate& c : candidates_) total += c.weight;
  return total;
}

// The candidate, in the order of step 3, whose mass range [sum of the weights before it,
// that + its weight) holds `target` (< total weight). Without sorting: weights first go
// into buckets by bit width, which are in order with one another
//
//   bucket 45 (weights 2^44..)  | bucket 44 (2^43..2^44-1) | ...   masses m45, m44, ...
//   target - m45 - m44 ... falls in one bucket; only that bucket is searched
//
// and inside that bucket a weighted quickselect (partition at the middle, go left or
// right by the left half's mass) finds the candidate in O(bucket size).
Sampler::Candidate Sampler::select_by_mass(uint64_t target) {
  std::array<uint64_t, 65> bucket_mass{};
  for (const Candidate& c : candidates_) bucket_mass[std::bit_width(c.weight)] += c.weight;
  int bucket = 64;
  while (bucket > 0 && target >= bucket_mass[bucket]) target -= bucket_mass[bucket--];
  PG_CHECK(bucket > 0, "mass target beyond the total weight");
  bucket_.clear();
  for (const Candidate& c : candidates_)
    if (std::bit_width(c.weight) == static_cast<uint64_t>(bucket)) bucket_.push_back(c);

  const auto before = [](const Candidate& a, const Candidate& b) { return comes_before(a, b); };
  const auto begin = bucket_.begin();
  std::size_t lo = 0;
  std::size_t hi = bucket_.size();
  while (hi - lo > kSortRange) {
    const std::size_t mid = lo + (hi - lo) / 2;
    std::nth_element(begin + static_cast<std::ptrdiff_t>(lo), begin + static_cast<std::ptrdiff_t>(mid),
                     begin + static_cast<std::ptrdiff_t>(hi), before);
    uint64_t left = 0;
    for (std::size_t j = lo; j < mid; ++j) left += bucket_[j].weight;
    if (target < left) {
      hi = mid;
    } else if (target - left < bucket_[mid].weight) {
      return bucket_[mid];
    } else {
      target -= left + bucket_[mid].weight;
      lo = mid + 1;
    }
  }
  std::sort(begin + static_cast<std::ptrdiff_t>(lo), begin + static_cast<std::ptrdiff_t>(hi), before);
  for (std::size_t j = lo; j < hi; ++j) {
    if (target < bucket_[j].weight) return bucket_[j];
    target -= bucket_[j].weight;
  }
  PG_CHECK(false, "mass target beyond the bucket's weight");
  return {};
}

}  // namespace pagedgen
