// TokenMaskPack: the grammar masks (SamplingRow::allowed_tokens) of one step's sampling
// rows, laid out for the device sampler's upload: one mask row per sampling row that has a
// mask, in sampling-row order, each token_mask_words(vocab) words long for the logits' vocab,
// a mask shorter than that (a tokenizer with fewer ids than the model's embedding rows)
// padded with zero words, so the ids past it may not be picked, as for the CPU Sampler.
//
//   sampling rows  [ r0: 3 words   r1: none   r2: 2 words ]     vocab 96: 3 words per row
//   mask_row       [ 0             nullopt    1           ]
//   words          [ r0 w0 w1 w2 | r2 w0 w1 0 ]
//
// Mask rows follow sampling rows, never logits rows or a CUDA graph's padded batch rows:
// the n samples of a prompt read one logits row and have a mask row each, and padding rows
// are never sampled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace pagedgen {

class TokenMaskPack {
 public:
  // Starts an empty pack for logits rows of `vocab` ids (1 or more).
  void clear(int32_t vocab);
  // Appends a sampling row's mask (at most token_mask_words(vocab) words); returns its mask
  // row, or nullopt when the row has no mask (an empty span: every token may be picked).
  std::optional<int32_t> add(std::span<const uint32_t> allowed_tokens);

  std::size_t words_per_row() const { return words_per_row_; }
  int32_t num_rows() const { return num_rows_; }
  // [num_rows][words_per_row]
  std::span<const uint32_t> words() const { return words_; }
  // One mask row, as the CPU Sampler would read it.
  std::span<const uint32_t> row(int32_t mask_row) const;

 private:
  std::size_t words_per_row_ = 0;
  int32_t num_rows_ = 0;
  std::vector<uint32_t> words_;
};

}  // namespace pagedgen
