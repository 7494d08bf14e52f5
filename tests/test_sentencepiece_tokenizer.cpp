// SentencePiece: the ModelProto wire codec (bytes checked by hand, round trips, malformed
// input), a small hand-made model through libsentencepiece (merges by score, byte
// fallback, dummy prefix, special and user-defined tokens), and the llama-spm and phi-3
// vocabularies rebuilt as tokenizer.model and loaded through an HF directory, which must
// give the same ids as the GGUF path on every test vector.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "gguf_writer.h"
#include "model/gguf.h"
#include "test_paths.h"
#include "tokenizer/sentencepiece_proto.h"
#include "tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer/tokenizer_loader.h"
#include "util/error.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

const std::string kSpace = "\xE2\x96\x81";  // "▁"

std::string bytes_of(std::initializer_list<int> values) {
  std::string out;
  for (const int v : values) out.push_back(static_cast<char>(v));
  return out;
}

std::string parse_error(std::string_view bytes) {
  try {
    parse_spm_model(bytes, "test.model");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// <unk> <s> </s>, 256 byte pieces, then a few merges' worth of pieces, and one
// user-defined token. Ids: unk 0, <s> 1, </s> 2, <0xNN> 3 + NN, then in `kText` order.
const std::vector<std::string> kText = {kSpace, "a", "b", kSpace + "a", "ab", kSpace + "ab", "<u>"};
TokenId text_id(const std::string& piece) {
  for (size_t i = 0; i < kText.size(); ++i) {
    if (kText[i] == piece) return static_cast<TokenId>(3 + 256 + i);
  }
  FAIL("no piece ", piece);
  return 0;
}
TokenId byte_id(int byte) { return 3 + byte; }

SpmModel small_model() {
  SpmModel model;
  model.model_type = SpmModelType::Bpe;
  model.byte_fallback = true;
  model.normalizer_name = "identity";
  model.remove_extra_whitespaces = false;
  model.pieces.push_back({"<unk>", 0.0f, TokenType::Unknown});
  model.pieces.push_back({"<s>", 0.0f, TokenType::Control});
  model.pieces.push_back({"</s>", 0.0f, TokenType::Control});
  for (int b = 0; b < 256; ++b) model.pieces.push_back({fmt::format("<0x{:02X}>", b), 0.0f, TokenType::Byte});
  const std::vector<float> scores = {-1.0f, -2.0f, -3.0f, -4.0f, -5.0f, -6.0f, 0.0f};
  for (size_t i = 0; i < kText.size(); ++i) {
    model.pieces.push_back({kText[i], scores[i], i + 1 == kText.size() ? TokenType::UserDefined : TokenType::Normal});
  }
  return model;
}

SentencePieceTokenizer small_tokenizer() {
  const SpmModel model = small_model();
  SpmConfig config;
  config.serialized_model = serialize_spm_model(model);
  for (const SpmPiece& piece : model.pieces) {
    config.pieces.push_back(piece.text);
    config.types.push_back(piece.type);
  }
  config.added_tokens = added_tokens_from_types(config.pieces, config.types);
  config.special.bos = 1;
  config.special.eos = 2;
  config.special.unk = 0;
  config.source = "small test model";
  return SentencePieceTokenizer(std::move(config));
}

}  // namespace

TEST_CASE("ModelProto writer: bytes of one piece, checked by hand") {
  SpmModel model;
  model.pieces.push_back({"a", 0.5f, TokenType::Normal});
  const std::string bytes = serialize_spm_model(model);
  // pieces (field 1, length-delimited): piece=1 "a", score=2 fixed32 0.5, type=3 varint 1
  const std::string piece = bytes_of({0x0A, 0x01, 'a', 0x15, 0x00, 0x00, 0x00, 0x3F, 0x18, 0x01});
  REQUIRE(bytes.size() > piece.size() + 2);
  CHECK(bytes.substr(0, 2) == bytes_of({0x0A, static_cast<int>(piece.size())}));
  CHECK(bytes.substr(2, piece.size()) == piece);
  // trainer_spec (field 2) follows, and inside it pad_id=43 = -1 as a 10-byte varint.
  CHECK(static_cast<unsigned char>(bytes[2 + piece.size()]) == 0x12);
  const std::string pad_minus_one = bytes_of({0xD8, 0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01});
  CHECK(bytes.find(pad_minus_one) != std::string::npos);
}

TEST_CASE("ModelProto round trip keeps every field") {
  SpmModel model = small_model();
  model.pieces[5].score = -123.25f;
  model.treat_whitespace_as_suffix = true;
  model.unk_id = 0;
  model.bos_id = std::nullopt;
  model.eos_id = 2;
  model.pad_id = 7;
  model.bos_piece = "<bos>";
  model.precompiled_charsmap = bytes_of({0, 1, 2, 0xFF});
  model.add_dummy_prefix = false;
  model.escape_whitespaces = false;

  const SpmModel back = parse_spm_model(serialize_spm_model(model), "round trip");
  REQUIRE(back.pieces.size() == model.pieces.size());
  for (size_t i = 0; i < model.pieces.size(); ++i) {
    CHECK(back.pieces[i].text == model.pieces[i].text);
    CHECK(back.pieces[i].score == model.pieces[i].score);
    CHECK(back.pieces[i].type == model.pieces[i].type);
  }
  CHECK(back.model_type == SpmModelType::Bpe);
  CHECK(back.byte_fallback);
  CHECK(back.treat_whitespace_as_suffix);
  CHECK(back.unk_id == 0);
  CHECK_FALSE(back.bos_id.has_value());
  CHECK(back.eos_id == 2);
  CHECK(back.pad_id == 7);
  CHECK(back.bos_piece == "<bos>");
  CHECK(back.normalizer_name == "identity");
  CHECK(back.precompiled_charsmap == model.precompiled_charsmap);
  CHECK_FALSE(back.add_dummy_prefix);
  CHECK_FALSE(back.remove_extra_whitespaces);
  CHECK_FALSE(back.escape_whitespaces);
}

TEST_CASE("ModelProto reader: malformed bytes name the source and the byte offset") {
  CHECK(parse_error(bytes_of({0x0A, 0x05, 'a', 'b'})).find("test.model") != std::string::npos);
  CHECK(parse_error(bytes_of({0x0A, 0x05, 'a', 'b'})).find("byte 2") != std::string::npos);
  CHECK(parse_error(bytes_of({0x0A})).find("truncated varint") != std::string::npos);
  CHECK(parse_error(bytes_of({0x0B, 0x00})).find("wire type 3") != std::string::npos);
  CHECK(parse_error("").find("no pieces") != std::string::npos);
  CHECK(parse_error("IQ== 0\nIg== 1\n").find("test.model") != std::string::npos);  // tiktoken text
}

TEST_CASE("small model: merges by score, byte fallback, dummy prefix, special tokens") {
  const SentencePieceTokenizer tokenizer = small_tokenizer();
  CHECK(tokenizer.vocab_size() == 3 + 256 + 7);
  CHECK(tokenizer.encode("ab", false) == std::vector<TokenId>{text_id(kSpace + "ab")});
  CHECK(tokenizer.encode("ba", false) == std::vector<TokenId>{text_id(kSpace), text_id("b"), text_id("a")});
  CHECK(tokenizer.encode("\xC3\xA9", false) == std::vector<TokenId>{text_id(kSpace), byte_id(0xC3), byte_id(0xA9)});
  CHECK(tokenizer.encode("", false).empty());

  // <s> is control: one token only when parsing special tokens; the text after it gets
  // its own dummy prefix (as llama.cpp does after every special token).
  CHECK(tokenizer.encode("<s>a", true) == std::vector<TokenId>{1, text_id(kSpace + "a")});
  CHECK(tokenizer.encode("<s>a", false) ==
        std::vector<TokenId>{text_id(kSpace), byte_id('<'), byte_id('s'), byte_id('>'), text_id("a")});
  // <u> is user-defined: always one token.
  CHECK(tokenizer.encode("a<u>b", false) ==
        std::vector<TokenId>{text_id(kSpace + "a"), text_id("<u>"), text_id(kSpace), text_id("b")});

  CHECK(tokenizer.token_bytes(text_id(kSpace + "ab"), false) == " ab");
  CHECK(tokenizer.token_bytes(byte_id('A'), false) == "A");
  CHECK(tokenizer.token_bytes(1, false).empty());
  CHECK(tokenizer.token_bytes(1, true) == "<s>");
  CHECK(tokenizer.token_bytes(999999, true).empty());
  CHECK(tokenizer.piece(text_id(kSpace + "a")) == kSpace + "a");
  CHECK(tokenizer.decode(tokenizer.encode("ab ba \xC3\xA9", false), false) == "ab ba \xC3\xA9");
  CHECK(tokenizer.decode(std::vector<TokenId>{1, text_id(kSpace + "a")}, false) == "a");
  CHECK(tokenizer.decode(std::vector<TokenId>{1, text_id(kSpace + "a")}, true) == "<s> a");
  CHECK(tokenizer.special().end_of_generation == std::vector<TokenId>{2});
}

TEST_CASE("a model libsentencepiece rejects is an Error naming the source") {
  SpmModel model = small_model();
  model.pieces.erase(model.pieces.begin() + 3);  // byte fallback without <0x00>
  SpmConfig config;
  config.serialized_model = serialize_spm_model(model);
  config.pieces.assign(model.pieces.size(), "x");
  config.types.assign(model.pieces.size(), TokenType::Normal);
  config.source = "broken.model";
  try {
    SentencePieceTokenizer tokenizer(std::move(config));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("broken.model") != std::string::npos);
  }
}

TEST_CASE("GGUF vocabulary fix-ups: extra unknown tokens, empty pieces, missing byte pieces") {
  // Phi-3-like types: <unk> marked control, a second "unknown" token, no byte pieces.
  GgufWriter writer;
  const std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "[PAD1]", kSpace, "a", kSpace + "a", ""};
  const std::vector<int> types = {3, 3, 3, 2, 1, 1, 1, 1};
  std::vector<GgufValue> token_values, type_values, score_values;
  for (size_t i = 0; i < tokens.size(); ++i) {
    token_values.push_back({GgufValueType::STRING, tokens[i]});
    type_values.push_back({GgufValueType::INT32, int64_t{types[i]}});
    score_values.push_back({GgufValueType::FLOAT32, -static_cast<double>(i)});
  }
  writer.add("tokenizer.ggml.model", {GgufValueType::STRING, std::string("llama")});
  writer.add("tokenizer.ggml.tokens", gguf_array(GgufValueType::STRING, token_values));
  writer.add("tokenizer.ggml.token_type", gguf_array(GgufValueType::INT32, type_values));
  writer.add("tokenizer.ggml.scores", gguf_array(GgufValueType::FLOAT32, score_values));
  const TempDir dir("pagedgen-spm-fixups");
  write_file(dir / "vocab.gguf", writer.build().bytes);
  const GgufFile gguf(dir / "vocab.gguf");
  const auto tokenizer = load_tokenizer(gguf);
  CHECK(tokenizer->encode("a a", false) == std::vector<TokenId>{6, 6});
  CHECK(tokenizer->encode("[PAD1]a", true) == std::vector<TokenId>{3, 6});
  CHECK(tokenizer->special().add_bos);
  CHECK(tokenizer->special().bos == 1);
  // "x" is unknown to the vocabulary and there is no byte fallback: <unk>.
  CHECK(tokenizer->encode("x", false) == std::vector<TokenId>{4, 0});
  const SpmModel proto = parse_spm_model(gguf_spm_model_proto(gguf), "rebuilt");
  CHECK(proto.pieces[0].type == TokenType::Unknown);
  CHECK(proto.pieces[3].type == TokenType::Control);
  CHECK(proto.pieces[7].text == "[EMPTY_7]");
  CHECK_FALSE(proto.byte_fallback);
}

TEST_CASE("SentencePiece vocabularies rebuilt as tokenizer.model load through an HF directory") {
  const std::filesystem::path vectors = shared_dir() / "tokenizer-vectors";
  if (!std::filesystem::is_directory(vectors)) {
    MESSAGE("skipped: ", vectors.string(), " is absent");
    return;
  }
  for (const std::string name : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf"}) {
    CAPTURE(name);
    const GgufFile gguf(vectors / name);
    const auto from_gguf = load_tokenizer(gguf);
    const TempDir dir("pagedgen-spm-hf");
    {
      const std::string proto = gguf_spm_model_proto(gguf);
      std::ofstream out(dir / "tokenizer.model", std::ios::binary);
      out.write(proto.data(), static_cast<std::streamsize>(proto.size()));
    }
    const auto from_hf = load_hf_tokenizer(dir.path());
    REQUIRE(dynamic_cast<const SentencePieceTokenizer*>(from_hf.get()) != nullptr);
    CHECK(from_hf->vocab_size() == from_gguf->vocab_size());
    CHECK(from_hf->special().bos == from_gguf->special().bos);
    CHECK(from_hf->special().eos == from_gguf->special().eos);
    CHECK(from_hf->special().add_bos);

    const std::vector<std::string> texts = read_vocab_test_texts(vectors / (name + ".inp"));
    REQUIRE(texts.size() > 40);
    size_t same = 0;
    for (const std::string& text : texts) {
      const auto ids = from_hf->encode(text, false);
      if (ids == from_gguf->encode(text, false) && from_hf->decode(ids, false) == text) ++same;
    }
    MESSAGE(name, " via tokenizer.model: ", same, "/", texts.size(), " cases as through GGUF");
    CHECK(same == texts.size());
  }
}
