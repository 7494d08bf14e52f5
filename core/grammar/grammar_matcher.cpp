// Per-step masks from the cache plus the uncertain tokens checked on the real stack, and
// token acceptance byte by byte.
#include "grammar/grammar_matcher.h"

#include <algorithm>
#include <string_view>

#include "grammar/token_bitmask.h"
#include "util/error.h"

namespace pagedgen {
namespace {

size_t common_prefix_length(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)),
      levels_(std::max<size_t>(2, grammar_->trie().max_token_bytes() + 1)),
      expanded_(levels_.size()) {
  PG_CHECK(grammar_ != nullptr);
  const Grammar& g = grammar_->grammar();
  configs_.push_back({g.rule_start(g.root_rule()), kEmptyStack});
}

void GrammarMatcher::fill_next_token_mask(std::span<uint32_t> mask_words) {
  PG_CHECK(mask_words.size() == token_mask_words(grammar_->vocabulary().size()), "mask has {} words for {} tokens",
           mask_words.size(), grammar_->vocabulary().size());
  std::fill(mask_words.begin(), mask_words.end(), 0u);
  if (terminated_) return;
  const TokenMaskCache& cache = grammar_->masks();
  for (size_t i = 0; i < configs_.size(); ++i) {
    if (i > 0 && configs_[i].node == configs_[i - 1].node) continue;  // same node, other stack
    const NodeTokenMasks& masks = cache.node_masks(configs_[i].node);
    if (!masks.accepted_words.empty()) {
      for (size_t w = 0; w < mask_words.size(); ++w) mask_words[w] |= masks.accepted_words[w];
    } else {
      for (const TokenId id : masks.accepted_ids) allow_token(mask_words, id);
    }
  }
  for (const PdaConfig& config : configs_) check_uncertain(config, mask_words);
  if (is_complete()) {
    for (const TokenId id : grammar_->vocabulary().end_of_generation) allow_token(mask_words, id);
  }
}

void GrammarMatcher::check_uncertain(const PdaConfig& config, std::span<uint32_t> mask_words) {
  const std::vector<uint32_t>& uncertain = grammar_->masks().node_masks(config.node).uncertain;
  if (uncertain.empty()) return;
  const Grammar& grammar = grammar_->grammar();
  const TokenTrie& trie = grammar_->trie();
  // The tokens come in byte order, so each one reuses the levels of the prefix it shares
  // with the one before:
  //   ",\"a"  levels 0 1 2 3       ",}"  keeps levels 0 1, computes 2
  constexpr size_t kNone = ~size_t{0};
  levels_[0].assign(1, config);
  size_t ready = 0;          // levels_[0..ready] follow the previous token's bytes
  size_t num_expanded = 0;   // expanded_[0..num_expanded) are those levels expanded
  size_t failed_at = kNone;  // the previous token's first failed_at bytes lead nowhere
  std::string_view previous;
  for (const uint32_t t : uncertain) {
    const std::string_view bytes = trie.token_bytes(t);
    const size_t common = common_prefix_length(previous, bytes);
    previous = bytes;
    if (failed_at != kNone && common >= failed_at) continue;
    failed_at = kNone;
    size_t depth = std::min(common, ready);
    num_expanded = std::min(num_expanded, depth + 1);
    while (depth < bytes.size()) {
      if (num_expanded <= depth) {
        pda_expand(grammar, stacks_, levels_[depth], expanded_[depth], work_);
        num_expanded = depth + 1;
      }
      pda_advance(grammar, expanded_[depth], static_cast<uint8_t>(bytes[depth]), levels_[depth + 1]);
      if (levels_[depth + 1].empty()) {
        failed_at = depth + 1;
        break;
      }
      ++depth;
    }
    ready = depth;
    if (failed_at == kNone) allow_token(mask_words, trie.token_id(t));
  }
}

bool GrammarMatcher::accept_token(TokenId token) {
  if (terminated_) return false;
  if (is_end_of_generation(token)) {
    if (!is_complete()) return false;
    terminated_ = true;
    return true;
  }
  const TokenVocabulary& vocabulary = grammar_->vocabulary();
  if (token < 0 || token >= vocabulary.size()) return false;
  const std::string& bytes = vocabulary.bytes_by_id[static_cast<size_t>(token)];
  if (bytes.empty()) return false;
  const Grammar& grammar = grammar_->grammar();
  std::vector<PdaConfig>& current = levels_[0];
  std::vector<PdaConfig>& next = levels_[1];
  current = configs_;
  for (const char byte : bytes) {
    pda_expand(grammar, stacks_, current, expanded_[0], work_);
    pda_advance(grammar, expanded_[0], static_cast<uint8_t>(byte), next);
    if (next.empty()) return false;
    current.swap(next);
  }
  configs_.swap(current);
  return true;
}

bool GrammarMatcher::is_complete() const { return !terminated_ && pda_may_end(grammar_->grammar(), stacks_, configs_); }

bool GrammarMatcher::is_end_of_generation(TokenId token) const {
  const auto& ids = grammar_->vocabulary().end_of_generation;
  return std::find(ids.begin(), ids.end(), token) != ids.end();
}

}  // namespace pagedgen
