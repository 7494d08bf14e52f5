#include "sample/stop_checker.h"

#include <algorithm>

#include "util/error.h"

namespace pagedgen {

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
  }
  PG_CHECK(false, "unknown FinishReason {}", static_cast<int>(reason));
  return {};
}

StopChecker::StopChecker(const SamplingParams& params, std::span<const TokenId> end_of_generation)
    : stop_strings_(params.stop),
      stop_ids_(params.stop_token_ids),
      min_tokens_(params.min_tokens),
      max_tokens_(params.max_tokens),
      include_stop_(params.include_stop_str_in_output) {
  if (!params.ignore_eos) stop_ids_.insert(stop_ids_.end(), end_of_generation.begin(), end_of_generation.end());
}

std::optional<FinishReason> StopChecker::append(TokenId token, std::string_view new_text, bool value_closed) {
  PG_CHECK(!finish_reason_, "append after the sample finished");
  ++num_tokens_;
  if (num_tokens_ >= min_tokens_) {
    if (const auto reason = check_stops(token, new_text, value_closed)) return reason;
  } else {
    text_.append(new_text);
  }
  if (num_tokens_ >= max_tokens_) finish_reason_ = FinishReason::kLength;
  return finish_reason_;
}

std::optional<FinishReason> StopChecker::check_stops(TokenId token, std::string_view new_text, bool value_closed) {
  const bool stop_id = std::find(stop_ids_.begin(), stop_ids_.end(), token) != stop_ids_.end();
  if (stop_id && !include_stop_) return stop(true);
  const std::size_t previous_size = text_.size();
  text_.append(new_text);
  if (const auto match = find_stop_string(previous_size)) {
    text_.resize(include_stop_ ? match->end : match->begin);
    return stop(true);
  }
  if (stop_id || value_closed) return stop(false);
  return std::nullopt;
}

std::optional<FinishReason> StopChecker::stop(bool text_closed) {
  text_closed_ = text_closed;
  finish_reason_ = FinishReason::kStop;
  return finish_reason_;
}

void StopChecker::finish_length() {
  PG_CHECK(!finish_reason_, "finish_length after the sample finished");
  finish_reason_ = FinishReason::kLength;
}

void StopChecker::append_held_back(std::string_view held_back) {
  PG_CHECK(finish_reason_.has_value(), "append_held_back before the sample finished");
  if (!text_closed_) text_.append(held_back);
}

// The earliest match that ends past `previous_size` (inside the new text; the first of the
// list among matches that start at one place): matches that end earlier were either
// found by an earlier call or fell before min_tokens, where stop strings do not apply.
std::optional<StopChecker::Match> StopChecker::find_stop_string(std::size_t previous_size) const {
  std::optional<Match> earliest;
  for (const std::string& stop : stop_strings_) {
    const std::size_t from = previous_size + 1 > stop.size() ? previous_size + 1 - stop.size() : 0;
    const std::size_t at = text_.find(stop, from);
    if (at != std::string::npos && (!earliest || at < earliest->begin)) earliest = Match{at, at + stop.size()};
  }
  return earliest;
}

}  // namespace pagedgen
