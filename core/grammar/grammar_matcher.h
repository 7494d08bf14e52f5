// One sequence's place in a grammar: which tokens may come next (a bit mask over the
// vocabulary), and moving past the token that was sampled. End-of-generation tokens are
// allowed exactly when the text so far is a complete value; once nothing but the end can
// follow (a closed top-level object), they are the only tokens allowed.
//
//   matcher.fill_next_token_mask(mask);   // before sampling: mask the logits
//   matcher.accept_token(sampled);        // after: always true for a token the mask allowed
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/pda_state.h"

namespace pagedgen {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);

  // `mask_words`: [token_mask_words(vocab size)] (token_bitmask.h), overwritten. Empty
  // once an end-of-generation token was accepted.
  void fill_next_token_mask(std::span<uint32_t> mask_words);

  // Moves past `token` when the grammar allows it there and returns true; returns false
  // and stays where it was when it does not.
  [[nodiscard]] bool accept_token(TokenId token);

  // The text so far is a complete value: an end-of-generation token may come next.
  bool is_complete() const;
  // An end-of-generation token was accepted: nothing may come next.
  bool is_terminated() const { return terminated_; }

  const CompiledGrammar& grammar() const { return *grammar_; }

 private:
  // Sets the bits of `config`'s uncertain tokens that the real stack accepts.
  void check_uncertain(const PdaConfig& config, std::span<uint32_t> mask_words);
  bool is_end_of_generation(TokenId token) const;

  std::shared_ptr<const CompiledGrammar> grammar_;
  StackPool stacks_;
  std::vector<PdaConfig> configs_;  // sorted: every reading of the text so far
  bool terminated_ = false;
  // Scratch space, kept to spare allocations on every step.
  std::vector<std::vector<PdaConfig>> levels_;    // [depth] configurations after `depth` bytes
  std::vector<std::vector<PdaConfig>> expanded_;  // [depth] the same, expanded
  std::vector<PdaConfig> work_;
};

}  // namespace pagedgen
