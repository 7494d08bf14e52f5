// Byte-level BPE encoding. Merging keeps a linked list of symbols and a min-heap of
// candidate pairs keyed by (merge rank, position); a candidate is stale once either side
// has changed, which the stored ids detect:
//
//   bytes   h  e  l  l  o        symbols start as one vocabulary id per byte
//   rank 3  he l  l  o           pop the lowest-ranked adjacent pair, merge it,
//   rank 7  he ll o              push the new pairs it forms with its neighbours
//   rank 9  he llo  ...          until no adjacent pair has a merge
#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <bit>

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace pagedgen {
namespace {

// GPT-2 bytes_to_unicode(): bytes '!'..'~', '¡'..'¬', '®'..'ÿ' map to the same code
// point; the other 68 bytes map to U+0100, U+0101, ... in byte order.
struct ByteLevelTables {
  std::array<char32_t, 256> byte_to_code_point{};
  std::array<int16_t, 324> code_point_to_byte{};  // code points < 324; -1 when unmapped

  ByteLevelTables() {
    code_point_to_byte.fill(-1);
    const auto stands_for_itself = [](int b) {
      return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    char32_t next_extra = 0x100;
    for (int b = 0; b < 256; ++b) {
      const char32_t cp = stands_for_itself(b) ? static_cast<char32_t>(b) : next_extra++;
      byte_to_code_point[static_cast<size_t>(b)] = cp;
      code_point_to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteLevelTables& byte_level_tables() {
  static const ByteLevelTables tables;  // immutable after first use
  return tables;
}

}  // namespace

std::string byte_level_encode(std::string_view bytes) {
  const auto& tables = byte_level_tables();
  std::string text;
  text.reserve(bytes.size() * 2);
  for (const char byte : bytes) {
    utf8_append(text, tables.byte_to_code_point[static_cast<unsigned char>(byte)]);
  }
  return text;
}

std::string byte_level_decode(std::string_view text) {
  const auto& tables = byte_level_tables();
  std::string bytes;
  bytes.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Step step = utf8_next(text, pos);
    const bool mapped = step.status == Utf8Status::Valid && step.code_point < tables.code_point_to_byte.size() &&
                        tables.code_point_to_byte[step.code_point] >= 0;
    if (mapped) {
      bytes.push_back(static_cast<char>(tables.code_point_to_byte[step.code_point]));
    } else {
      bytes.append(text.substr(pos, step.length));
    }
    pos += step.length;
  }
  return bytes;
}

BpeTokenizer::BpeTokenizer(BpeConfig config)
    : pretokenizer_(std::move(config.pretokenizer)),
      ignore_merges_(config.ignore_merges),
      source_(std::move(config.source)) {
  std::vector<std::string> surfaces;
  surfaces.reserve(config.pieces.size());
  for (size_t id = 0; id < config.pieces.size(); ++id) {
    const std::string& piece = config.pieces[id];
    switch (config.types[id]) {
      case TokenType::Normal:
        surfaces.push_back(byte_level_decode(piece));
        break;
      case TokenType::Byte: {
        // SentencePiece-style "<0xAB>" byte tokens, rare in byte-level vocabularies.
        const auto byte = byte_piece_value(piece);
        surfaces.push_back(byte ? std::string(1, static_cast<char>(*byte)) : piece);
        break;
      }
      default:
        surfaces.push_back(piece);
        break;  // added/special tokens are plain text
    }
  }
  if (ignore_merges_) {
    for (size_t id = 0; id < surfaces.size(); ++id) {
      if (config.types[id] == TokenType::Normal) normal_by_bytes_.emplace(surfaces[id], static_cast<TokenId>(id));
    }
  }
  vocab_ = Vocabulary(std::move(config.pieces), std::move(config.types), std::move(surfaces),
                      std::move(config.added_tokens));

  for (int b = 0; b < 256; ++b) {
    byte_tokens_[static_cast<size_t>(b)] = vocab_.find_piece(byte_level_encode(std::string(1, static_cast<char>(b))));
  }

  size_t table_size = 16;
  while (table_size < 2 * config.merges.size()) table_size *= 2;
  merge_slots_.assign(table_size, MergeSlot{kNoKey, Merge{0, 0}});
  merge_shift_ = 64 - std::countr_zero(table_size);
  for (size_t rank = 0; rank < config.merges.size(); ++rank) {
    const auto& [left_text, right_text] = config.merges[rank];
    const auto left = vocab_.find_piece(left_text);
    const auto right = vocab_.find_piece(right_text);
    const auto merged = vocab_.find_piece(left_text + right_text);
    // A merge whose result is not a token can never be emitted; HF skips it the same way.
    if (!left || !right || !merged) continue;
    insert_merge(pair_key(*left, *right), Merge{static_cast<int32_t>(rank), *merged});
  }
  special_ = std::move(config.special);
  complete_special_tokens();
}

namespace {

// Fibonacci hashing: multiply, keep the top bits.
size_t slot_of(uint64_t key, int shift) { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift); }

}  // namespace

void BpeTokenizer::insert_merge(uint64_t key, Merge merge) {
  const size_t mask = merge_slots_.size() - 1;
  for (size_t slot = slot_of(key, merge_shift_);; slot = (slot + 1) & mask) {
    MergeSlot& entry = merge_slots_[slot];
    if (entry.key == key) return;  // a repeated pair keeps its first (lowest) rank
    if (entry.key == kNoKey) {
      entry = MergeSlot{key, merge};
      ++num_merges_;
      return;
    }
  }
}

std::optional<BpeTokenizer::Merge> BpeTokenizer::find_merge(TokenId left, TokenId right) const {
  const uint64_t key = pair_key(left, right);
  const size_t mask = merge_slots_.size() - 1;
  for (size_t slot = slot_of(key, merge_shift_);; slot = (slot + 1) & mask) {
    const MergeSlot& entry = merge_slots_[slot];
    if (entry.key == key) return entry.merge;
    if (entry.key == kNoKey) return std::nullopt;
  }
}

void BpeTokenizer::push_candidate(Scratch& scratch, int32_t left) const {
  if (left == kNoSymbol) return;
  const Symbol& l = scratch.symbols[static_cast<size_t>(left)];
  if (l.next == kNoSymbol) return;
  const Symbol& r = scratch.symbols[static_cast<size_t>(l.next)];
  if (!l.known || !r.known) return;
  const auto merge = find_merge(l.id, r.id);
  if (!merge) return;
  scratch.heap.push_back({merge->rank, left, l.id, r.id, merge->merged});
  std::push_heap(scratch.heap.begin(), scratch.heap.end(), heap_after);
}

void BpeTokenizer::encode_word(std::string_view word, Scratch& scratch, std::vector<TokenId>& out) const {
  if (ignore_merges_) {
    const auto it = normal_by_bytes_.find(std::string(word));
    if (it != normal_by_bytes_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  auto& symbols = scratch.symbols;
  auto& heap = scratch.heap;
  symbols.clear();
  heap.clear();
  const auto count = static_cast<int32_t>(word.size());
  for (int32_t i = 0; i < count; ++i) {
    const auto token = byte_tokens_[static_cast<unsigned char>(word[static_cast<size_t>(i)])];
    symbols.push_back({.id = token.value_or(0),
                       .known = token.has_value(),
                       .prev = i - 1,
                       .next = i + 1 < count ? i + 1 : kNoSymbol,
                       .alive = true});
  }
  for (int32_t i = 0; i + 1 < count; ++i) push_candidate(scratch, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), heap_after);
    const Candidate candidate = heap.back();
    heap.pop_back();
    Symbol& left = symbols[static_cast<size_t>(candidate.left)];
    // A symbol's successor changes only when it merges into it (changing its id), so
    // equal ids on both sides mean the pair is still adjacent and unchanged.
    if (!left.alive || left.id != candidate.left_id || left.next == kNoSymbol) continue;
    Symbol& right = symbols[static_cast<size_t>(left.next)];
    if (right.id != candidate.right_id) continue;

    left.id = candidate.merged;
    right.alive = false;
    left.next = right.next;
    if (right.next != kNoSymbol) symbols[static_cast<size_t>(right.next)].prev = candidate.left;
    push_candidate(scratch, left.prev);
    push_candidate(scratch, candidate.left);
  }

  const auto unk = special_.unk;
  for (int32_t i = count > 0 ? 0 : kNoSymbol; i != kNoSymbol; i = symbols[static_cast<size_t>(i)].next) {
    const Symbol& symbol = symbols[static_cast<size_t>(i)];
    if (symbol.known) {
      out.push_back(symbol.id);
    } else if (unk) {
      // Only a byte that valid UTF-8 never contains can lack a symbol in a sane vocabulary.
      out.push_back(*unk);
    }
  }
}

std::vector<TokenId> BpeTokenizer::encode(std::string_view text, bool parse_special) const {
  std::string repaired;
  if (!utf8_is_valid(text)) {
    repaired = utf8_sanitize(text);
    text = repaired;
  }
  std::vector<TokenId> ids;
  std::vector<std::string_view> words;
  std::string prefixed;
  Scratch scratch;
  for (const TextFragment& fragment : vocab_.added_tokens().split(text, parse_special)) {
    if (fragment.token) {
      ids.push_back(*fragment.token);
      continue;
    }
    std::string_view fragment_text = fragment.text;
    if (pretokenizer_.add_prefix_space() && !fragment_text.starts_with(' ')) {
      prefixed.assign(1, ' ');
      prefixed.append(fragment_text);
      fragment_text = prefixed;
    }
    words.clear();
    pretokenizer_.split(fragment_text, words);
    for (const std::string_view word : words) encode_word(word, scratch, ids);
  }
  return ids;
}

std::string BpeTokenizer::token_bytes(TokenId id, bool render_special) const {
  return vocab_.token_bytes(id, render_special);
}

}  // namespace pagedgen
