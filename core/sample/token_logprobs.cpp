#include "sample/token_logprobs.h"

#include <algorithm>

#include "sample/sampling_math.h"
#include "util/error.h"

namespace pagedgen {

namespace {

// Whether (a, ia) ranks before (b, ib): higher logit, then lower id.
bool ranks_before(float a, std::size_t ia, float b, std::size_t ib) { return a > b || (a == b && ia < ib); }

// The num_top best ids of the row in rank order: one pass keeping a sorted list of at most
// num_top (<= 20) entries, O(vocab) for typical rows.
std::vector<std::size_t> top_ids(std::span<const float> logits, std::size_t num_top) {
  std::vector<std::size_t> best;
  best.reserve(num_top + 1);
  if (num_top == 0) return best;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (best.size() == num_top && !ranks_before(logits[i], i, logits[best.back()], best.back())) continue;
    auto at = best.end();
    while (at != best.begin() && ranks_before(logits[i], i, logits[*(at - 1)], *(at - 1))) --at;
    best.insert(at, i);
    if (best.size() > num_top) best.pop_back();
  }
  return best;
}

}  // namespace

TokenLogprobs token_logprobs(std::span<const float> logits, TokenId token, int32_t num_top) {
  PG_CHECK(token >= 0 && static_cast<std::size_t>(token) < logits.size(), "logprobs of token {} in a row of {}", token,
           logits.size());
  PG_CHECK(num_top >= 0, "{} top logprobs", num_top);
  float max_logit = -INFINITY;
  for (const float logit : logits) {
    PG_CHECK(!sampling::breaks_row(logit), "logprobs of an unusable logits row");
    max_logit = std::max(max_logit, logit);
  }
  PG_CHECK(max_logit > -INFINITY, "logprobs of a row with no finite logit");
  double sum = 0.0;
  for (std::size_t chunk = 0; chunk < logits.size(); chunk += sampling::kLogSumChunk) {
    double chunk_sum = 0.0;
    const std::size_t end = std::min(logits.size(), chunk + sampling::kLogSumChunk);
    for (std::size_t i = chunk; i < end; ++i) chunk_sum += sampling::softmax_term(logits[i], max_logit);
    sum += chunk_sum;
  }
  const double log_sum = sampling::log_of_sum(sum);
  TokenLogprobs result;
  const float token_logit = logits[static_cast<std::size_t>(token)];
  result.logprob = sampling::log_softmax(token_logit, max_logit, log_sum);
  result.rank = static_cast<int32_t>(std::ranges::count_if(logits, [&](float logit) { return logit >= token_logit; }));
  for (const std::size_t id : top_ids(logits, static_cast<std::size_t>(num_top)))
    result.top.push_back({static_cast<TokenId>(id), sampling::log_softmax(logits[id], max_logit, log_sum)});
  return result;
}

bool is_usable_logprobs_row(std::span<const float> logits) {
  bool has_finite = false;
  for (const float logit : logits) {
    if (sampling::breaks_row(logit)) return false;
    has_finite = has_finite || logit > -INFINITY;
  }
  return has_finite;
}

}  // namespace pagedgen
