// PCRE2-backed pre-tokenization: ordered split rules, each applied to every piece the
// rule before it produced.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenizer.h"

#include <pcre2.h>

#include <algorithm>
#include <array>
#include <optional>

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace pagedgen {
namespace {

// GPT-2 (and HF ByteLevel use_regex): contractions, letters, numbers, other symbols, each
// with an optional leading space; whitespace runs leave their last space to the next word.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string pcre2_message(int code) {
  std::array<PCRE2_UCHAR, 256> buffer{};
  pcre2_get_error_message(code, buffer.data(), buffer.size());
  return std::string(reinterpret_cast<const char*>(buffer.data()));
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};
using MatchData = std::unique_ptr<pcre2_match_data, MatchDataDeleter>;

}  // namespace

// One compiled pattern. Immutable after construction, so one instance serves every thread
// (each match call brings its own match data).
class CompiledPattern {
 public:
  explicit CompiledPattern(const SplitRule& rule) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    // Unicode properties only mean something to a regex (PCRE2 rejects UCP with LITERAL).
    const uint32_t options = PCRE2_UTF | (rule.literal ? PCRE2_LITERAL : PCRE2_UCP);
    code_.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rule.pattern.data()), rule.pattern.size(), options,
                              &error_code, &error_offset, nullptr));
    if (!code_) {
      fail(
          "pre-tokenizer pattern '{}' does not compile at offset {}: {}; the tokenizer's "
          "split pattern is not supported by PCRE2",
          rule.pattern, error_offset, pcre2_message(error_code));
    }
    // JIT is an optimisation only: without it (e.g. no executable memory) matching still works.
    jit_ = pcre2_jit_compile(code_.get(), PCRE2_JIT_COMPLETE) == 0;
  }

  MatchData make_match_data() const { return MatchData(pcre2_match_data_create_from_pattern(code_.get(), nullptr)); }

  // The [start, end) of the first match in `subject` at or after `offset`, or nullopt.
  std::optional<std::pair<size_t, size_t>> find(std::string_view subject, size_t offset, MatchData& data) const {
    const auto* chars = reinterpret_cast<PCRE2_SPTR>(subject.data());
    // The caller guarantees valid UTF-8, so PCRE2 need not re-check the subject each call.
    int rc = pcre2_match(code_.get(), chars, subject.size(), offset, PCRE2_NO_UTF_CHECK, data.get(), nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && jit_) {
      // Very long runs can exhaust the JIT stack; the interpreter keeps its state on the heap.
      rc = pcre2_match(code_.get(), chars, subject.size(), offset, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, data.get(),
                       nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) return std::nullopt;
    if (rc < 0) {
      fail("pre-tokenizer pattern failed on a {}-byte text at byte {}: {}", subject.size(), offset, pcre2_message(rc));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
    return std::pair<size_t, size_t>{ovector[0], ovector[1]};
  }

 private:
  // A member type, not one of the anonymous namespace: the class has external linkage, and
  // in a unity batch GCC warns of a field whose type has internal linkage.
  struct CodeDeleter {
    void operator()(pcre2_code* code) const { pcre2_code_free(code); }
  };
  std::unique_ptr<pcre2_code, CodeDeleter> code_;
  bool jit_ = false;
};

PreTokenizer::PreTokenizer(std::vector<SplitRule> rules, bool add_prefix_space)
    : rules_(std::move(rules)), add_prefix_space_(add_prefix_space) {
  patterns_.reserve(rules_.size());
  for (const SplitRule& rule : rules_) patterns_.push_back(std::make_shared<const CompiledPattern>(rule));
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  if (text.empty()) return;
  std::vector<std::string_view> current{text};
  std::vector<std::string_view> next;
  for (size_t r = 0; r < patterns_.size(); ++r) {
    const CompiledPattern& pattern = *patterns_[r];
    const bool keep_matches = rules_[r].behavior == SplitBehavior::Isolated;
    MatchData data = pattern.make_match_data();
    next.clear();
    for (const std::string_view piece : current) {
      size_t emitted = 0;  // end of the last piece pushed
      size_t offset = 0;
      while (offset < piece.size()) {
        const auto match = pattern.find(piece, offset, data);
        if (!match) break;
        const auto [start, end] = *match;
        if (start == end) {
          // An empty match is a cut (HF tokenizers and llama.cpp agree); search on from
          // the next character.
          if (start > emitted) next.push_back(piece.substr(emitted, start - emitted));
          emitted = start;
          offset = start + std::max<size_t>(1, utf8_next(piece, start).length);
          continue;
        }
        if (start > emitted) next.push_back(piece.substr(emitted, start - emitted));
        if (keep_matches) next.push_back(piece.substr(start, end - start));
        emitted = offset = end;
      }
      if (emitted < piece.size()) next.push_back(piece.substr(emitted));
    }
    current.swap(next);
  }
  pieces.insert(pieces.end(), current.begin(), current.end());
}

std::string_view gpt2_split_pattern() { return kGpt2Pattern; }

}  // namespace pagedgen
