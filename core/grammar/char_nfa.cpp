// Thompson construction with copies for bounded repeats, and the set arithmetic of
// negated classes.
#include "grammar/char_nfa.h"

#include <algorithm>

#include "grammar/grammar_error.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace pagedgen {

std::vector<CodePointRange> complement_ranges(std::span<const CodePointRange> ranges) {
  std::vector<CodePointRange> sorted(ranges.begin(), ranges.end());
  sorted.push_back({0xD800, 0xDFFF});  // surrogates are no characters
  std::ranges::sort(sorted, [](const CodePointRange& a, const CodePointRange& b) { return a.first < b.first; });
  std::vector<CodePointRange> out;
  char32_t next = 0;  // the least code point not yet covered
  bool done = false;
  for (const CodePointRange& r : sorted) {
    if (r.first > next) out.push_back({next, r.first - 1});
    if (r.last >= kMaxCodePoint) {
      done = true;
      break;
    }
    next = std::max<char32_t>(next, r.last + 1);
  }
  if (!done) out.push_back({next, kMaxCodePoint});
  return out;
}

NfaStateId CharNfa::add_state() {
  if (states_.size() >= kMaxStates)
    refuse_schema("{} needs more than {} automaton states (large repeat bounds or very many alternatives); lower them",
                  what_, kMaxStates);
  states_.emplace_back();
  return static_cast<NfaStateId>(states_.size() - 1);
}

NfaFragment CharNfa::empty() {
  const NfaStateId start = add_state();
  const NfaStateId accept = add_state();
  states_[start].empty_moves.push_back(accept);
  return {start, start, accept};
}

NfaFragment CharNfa::ranges(std::span<const CodePointRange> ranges) {
  const NfaStateId start = add_state();
  const NfaStateId accept = add_state();
  for (const CodePointRange& r : ranges) {
    PG_CHECK(r.first <= r.last && r.last <= kMaxCodePoint, "code point range {:x}..{:x}", uint32_t{r.first},
             uint32_t{r.last});
    states_[start].ranges.push_back({r, accept});
  }
  return {start, start, accept};
}

NfaFragment CharNfa::call(uint32_t rule) {
  const NfaStateId start = add_state();
  const NfaStateId accept = add_state();
  states_[start].calls.push_back({rule, accept});
  return {start, start, accept};
}

NfaFragment CharNfa::literal(std::string_view text) {
  NfaFragment out = empty();
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Step step = utf8_next(text, pos);
    PG_CHECK(step.status == Utf8Status::Valid, "literal of valid UTF-8");
    const CodePointRange range{step.code_point, step.code_point};
    out = concat(out, ranges({&range, 1}));
    pos += step.length;
  }
  return out;
}

NfaFragment CharNfa::concat(NfaFragment a, NfaFragment b) {
  states_[a.accept].empty_moves.push_back(b.start);
  return {std::min(a.first_state, b.first_state), a.start, b.accept};
}

NfaFragment CharNfa::alternate(std::span<const NfaFragment> alternatives) {
  PG_CHECK(!alternatives.empty(), "an alternation of nothing");
  const NfaStateId start = add_state();
  const NfaStateId accept = add_state();
  for (const NfaFragment& x : alternatives) {
    states_[start].empty_moves.push_back(x.start);
    states_[x.accept].empty_moves.push_back(accept);
  }
  return {alternatives.front().first_state, start, accept};
}

NfaFragment CharNfa::copy(NfaFragment x, NfaStateId end) {
  // Only the fragment's own states are copied, so its edges must stay among them.
  const auto offset = static_cast<NfaStateId>(states_.size()) - x.first_state;
  for (NfaStateId id = x.first_state; id < end; ++id) {
    (void)add_state();
    NfaState copied = states_[id];
    const auto shift = [&](NfaStateId& target) {
      PG_CHECK(target >= x.first_state && target < end, "a fragment's edge leaves it");
      target += offset;
    };
    for (NfaRangeEdge& e : copied.ranges) shift(e.target);
    for (NfaCallEdge& e : copied.calls) shift(e.target);
    for (NfaStateId& t : copied.empty_moves) shift(t);
    states_.back() = std::move(copied);
  }
  return {x.first_state + offset, x.start + offset, x.accept + offset};
}

NfaFragment CharNfa::optional(NfaFragment x) {
  states_[x.start].empty_moves.push_back(x.accept);
  return x;
}

NfaFragment CharNfa::loop(NfaFragment x, bool may_skip) {
  const NfaStateId start = add_state();
  const NfaStateId accept = add_state();
  states_[start].empty_moves.push_back(x.start);
  if (may_skip) states_[start].empty_moves.push_back(accept);
  states_[x.accept].empty_moves.push_back(x.start);
  states_[x.accept].empty_moves.push_back(accept);
  return {x.first_state, start, accept};
}

NfaFragment CharNfa::repeat(NfaFragment x, uint64_t min_count, std::optional<uint64_t> max_count) {
  PG_CHECK(!max_count || *max_count >= min_count, "repeat {}..{}", min_count, *max_count);
  if (max_count == 0) {
    const NfaFragment none = empty();
    return {x.first_state, none.start, none.accept};
  }
  // Copies of x: one per count up to the bound, or min_count (at least one) when unbounded.
  const uint64_t num_copies = max_count ? *max_count : std::max<uint64_t>(min_count, 1);
  const uint64_t size = states_.size() - x.first_state + 2;  // + a star's two states
  if (num_copies > (kMaxStates - std::min(kMaxStates, states_.size())) / size + 1)
    refuse_schema("{} repeats a piece of {} states {} times: more than its {} automaton states; lower the bound", what_,
                  size - 2, num_copies, kMaxStates);
  const auto x_end = static_cast<NfaStateId>(states_.size());
  std::vector<NfaFragment> pieces{x};
  for (uint64_t i = 1; i < num_copies; ++i) pieces.push_back(copy(x, x_end));
  if (max_count) {
    for (uint64_t i = min_count; i < pieces.size(); ++i) pieces[i] = optional(pieces[i]);
  } else {
    pieces.back() = loop(pieces.back(), min_count == 0);
  }
  NfaFragment out = pieces.front();
  for (size_t i = 1; i < pieces.size(); ++i) out = concat(out, pieces[i]);
  return out;
}

}  // namespace pagedgen
