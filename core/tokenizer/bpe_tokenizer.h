// Byte-level BPE (GPT-2, Llama 3, Qwen 2, SmolLM, StarCoder): special tokens split out,
// text cut into words by the pre-tokenizer, each word's bytes mapped to vocabulary
// symbols and merged pairwise, lowest merge rank first.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocabulary.h"

namespace pagedgen {

struct BpeConfig {
  // Pieces as stored: normal tokens in GPT-2's byte-to-unicode form ("Ġthe"), added and
  // special tokens as plain text ("<|im_end|>").
  std::vector<std::string> pieces;
  std::vector<TokenType> types;
  std::vector<std::pair<std::string, std::string>> merges;  // rank order, first = rank 0
  PreTokenizer pretokenizer;
  bool ignore_merges = false;  // a word that is a token itself is taken whole
  std::vector<AddedToken> added_tokens;
  SpecialTokens special;
  std::string source;  // where the vocabulary came from, for messages
};

class BpeTokenizer final : public Tokenizer {
 public:
  explicit BpeTokenizer(BpeConfig config);

  std::vector<TokenId> encode(std::string_view text, bool parse_special) const override;
  std::string token_bytes(TokenId id, bool render_special) const override;
  std::string piece(TokenId id) const override { return vocab_.piece(id); }
  int32_t vocab_size() const override { return vocab_.size(); }
  std::optional<TokenId> find_token(std::string_view text) const override { return vocab_.find(text); }

  size_t num_merges() const { return num_merges_; }

 private:
  struct Merge {
    int32_t rank;
    TokenId merged;
  };
  static uint64_t pair_key(TokenId left, TokenId right) {
    return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
  }
  // Per-call working memory for merging, reused across the words of one encode().
  struct Symbol {
    TokenId id;
    bool known;    // false: a byte the vocabulary has no symbol for (never merged)
    int32_t prev;  // index into symbols, kNoSymbol at the ends
    int32_t next;
    bool alive;  // false once merged into its left neighbour
  };
  struct Candidate {
    int32_t rank;
    int32_t left;  // symbol index of the pair's left side
    TokenId left_id;
    TokenId right_id;
    TokenId merged;
  };
  struct Scratch {
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
  };
  static constexpr int32_t kNoSymbol = -1;
  // Heap order: lowest rank first, then leftmost (as HF and llama.cpp break ties).
  static bool heap_after(const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  }

  std::optional<Merge> find_merge(TokenId left, TokenId right) const;
  void push_candidate(Scratch& scratch, int32_t left) const;
  void encode_word(std::string_view word, Scratch& scratch, std::vector<TokenId>& out) const;

  Vocabulary vocab_;
  PreTokenizer pretokenizer_;
  bool ignore_merges_;
  std::string source_;
  // (left, right) -> merge, open addressing with linear probing: the lookup is the
  // innermost operation of encoding, and std::unordered_map's modulo and node hops cost
  // several times more. Size is a power of two at most half full.
  struct MergeSlot {
    uint64_t key;  // kNoKey marks an empty slot
    Merge merge;   // key and value share a cache line: one miss per probe
  };
  std::vector<MergeSlot> merge_slots_;
  int merge_shift_ = 64;  // 64 - log2(table size)
  size_t num_merges_ = 0;
  static constexpr uint64_t kNoKey = ~uint64_t{0};  // ids are < 2^31, never both all-ones
  void insert_merge(uint64_t key, Merge merge);
  std::array<std::optional<TokenId>, 256> byte_tokens_{};     // single-byte symbols
  std::unordered_map<std::string, TokenId> normal_by_bytes_;  // for ignore_merges
};

// GPT-2's reversible byte <-> unicode mapping: printable bytes stand for themselves, the
// others for U+0100 onwards, so every byte string is a printable token text.
std::string byte_level_encode(std::string_view bytes);
// The inverse; characters outside the mapping are kept as their UTF-8 bytes.
std::string byte_level_decode(std::string_view text);

}  // namespace pagedgen
