// Fuzz target: the tokenizers' encode/decode round trip. The first byte picks a vocabulary
// (the llama.cpp vectors' GGUF vocabularies in ../shared/tokenizer-vectors: gpt-2,
// llama-spm, phi-3, starcoder; and the default model's when installed), the rest is text.
// Checked: encoded ids lie in the vocabulary; valid UTF-8 text decodes back to itself (but
// for SentencePiece's space symbol, unknown bytes and user-defined tokens' text);
// streaming through IncrementalDecoder gives what decode() gives; decoding any ids (the
// input's bytes read as ids) gives valid UTF-8.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_files.h"
#include "loader/default_model.h"
#include "model/gguf.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_loader.h"
#include "tokenizer/token_type.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocabulary.h"
#include "util/error.h"

using namespace pagedgen;

namespace {

struct LoadedVocabulary {
  std::string name;
  std::unique_ptr<Tokenizer> tokenizer;
  AddedTokenMatcher always_matched;  // its user-defined tokens, matched even in plain text
};

std::vector<LoadedVocabulary>& vocabularies() {
  static std::vector<LoadedVocabulary> loaded;
  return loaded;
}

void load(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) return;
  const GgufFile gguf(path);
  const std::vector<std::string> pieces = gguf.get_string_array("tokenizer.ggml.tokens").value();
  std::vector<TokenType> types(pieces.size(), TokenType::Normal);
  if (const auto numbers = gguf.get_int_array("tokenizer.ggml.token_type"))
    for (std::size_t i = 0; i < types.size(); ++i)
      types[i] = token_type_from_number((*numbers)[i]).value_or(TokenType::Unused);
  std::vector<AddedToken> user_defined;
  for (AddedToken& token : added_tokens_from_types(pieces, types))
    if (!token.special) user_defined.push_back(std::move(token));
  vocabularies().push_back(
      {path.filename().string(), load_tokenizer(gguf), AddedTokenMatcher(std::move(user_defined))});
}

[[noreturn]] void finding(const char* what, const LoadedVocabulary& vocab, std::string_view text) {
  std::fprintf(stderr, "%s (vocabulary %s, %zu bytes of text)\n", what, vocab.name.c_str(), text.size());
  std::abort();
}

// What decoding the encoded `text` gives back: the text itself, except that SentencePiece
// reads U+2581 (its own symbol for a space) as a space, as libsentencepiece, llama.cpp and
// HF tokenizers all do.
std::string expected_decoding(const Tokenizer& tokenizer, std::string_view text) {
  constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";
  std::string expected(text);
  if (dynamic_cast<const SentencePieceTokenizer*>(&tokenizer) == nullptr) return expected;
  for (std::size_t at = expected.find(kSpaceSymbol); at != std::string::npos; at = expected.find(kSpaceSymbol, at))
    expected.replace(at, kSpaceSymbol.size(), " ");
  return expected;
}

std::string stream_decode(const Tokenizer& tokenizer, const std::vector<TokenId>& ids, bool render_special) {
  IncrementalDecoder decoder(tokenizer, render_special);
  std::string text;
  for (const TokenId id : ids) text += decoder.push(id);
  return text + decoder.finish();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::filesystem::path dir = std::filesystem::path(PAGEDGEN_SHARED_DIR) / "tokenizer-vectors";
  for (const char* name :
       {"ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf", "ggml-vocab-starcoder.gguf"})
    load(dir / name);
  if (const std::optional<std::filesystem::path> model = find_default_model()) load(*model);
  if (vocabularies().empty()) {  // nothing to fuzz: say so, and end without a finding
    std::fprintf(stderr,
                 "fuzz_tokenizer_roundtrip: skipped: no vocabulary in %s and no default model "
                 "(scripts/fetch-model.sh)\n",
                 dir.string().c_str());
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const LoadedVocabulary& vocab = vocabularies()[data[0] % vocabularies().size()];
  const Tokenizer& tokenizer = *vocab.tokenizer;
  const std::string_view text = fuzz::as_text(data + 1, size - 1);

  const std::vector<TokenId> ids = tokenizer.encode(text, /*parse_special=*/false);
  for (const TokenId id : ids)
    if (id < 0 || id >= tokenizer.vocab_size()) finding("encode gave an id outside the vocabulary", vocab, text);
  const std::string decoded = tokenizer.decode(ids, /*render_special=*/false);
  // Lost by design, as in llama.cpp and HF: bytes the vocabulary has no symbol for (SmolLM2's
  // has none for most ASCII control bytes) become the unknown token, and the text of a
  // user-defined token is matched as that token, whose neighbours SentencePiece prefixes
  // with a space and which may strip the whitespace beside it.
  const std::optional<TokenId> unk = tokenizer.special().unk;
  bool lossless = !unk || std::find(ids.begin(), ids.end(), *unk) == ids.end();
  for (const TextFragment& fragment : vocab.always_matched.split(text, false)) lossless &= !fragment.token;
  if (lossless && utf8_is_valid(text) && decoded != expected_decoding(tokenizer, text))
    finding("valid UTF-8 text did not decode back to itself", vocab, text);
  if (stream_decode(tokenizer, ids, false) != decoded) finding("streamed decoding differs from decode()", vocab, text);

  const std::vector<TokenId> special_ids = tokenizer.encode(text, /*parse_special=*/true);
  const std::string special_decoded = tokenizer.decode(special_ids, /*render_special=*/true);
  if (stream_decode(tokenizer, special_ids, true) != special_decoded)
    finding("streamed decoding differs from decode() with special tokens", vocab, text);

  // Any ids, in or out of the vocabulary: 3 bytes each.
  std::vector<TokenId> any_ids;
  for (std::size_t i = 0; i + 3 <= text.size(); i += 3)
    any_ids.push_back(static_cast<TokenId>((uint32_t(uint8_t(text[i])) << 16 | uint32_t(uint8_t(text[i + 1])) << 8 |
                                            uint32_t(uint8_t(text[i + 2]))) %
                                           static_cast<uint32_t>(tokenizer.vocab_size() + 8)) -
                      4);
  for (const bool render_special : {false, true}) {
    const std::string any_text = tokenizer.decode(any_ids, render_special);
    if (!utf8_is_valid(any_text)) finding("decode() gave invalid UTF-8", vocab, text);
    if (stream_decode(tokenizer, any_ids, render_special) != any_text)
      finding("streamed decoding of arbitrary ids differs from decode()", vocab, text);
  }
  return 0;
}
