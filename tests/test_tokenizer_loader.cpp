// Tokenizer loading: HF tokenizer.json (a tiny hand-written one, and one written from the
// default model's GGUF vocabulary, which must tokenize exactly like the GGUF path),
// tokenizer_config.json / generation_config.json special tokens, chat templates in all
// three places HF keeps them, and the Errors for unsupported or broken inputs.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "gguf_writer.h"
#include "model/gguf.h"
#include "test_paths.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/sentencepiece_proto.h"
#include "tokenizer/tokenizer_loader.h"
#include "util/error.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

template <typename Load>
std::string load_error_of(Load load) {
  try {
    load();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// "hello" merges to one token, " hello" too; digits are split one by one.
constexpr std::string_view kTinyTokenizerJson = R"({
  "version": "1.0",
  "added_tokens": [
    {"id": 9, "content": "<|endoftext|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 10, "content": "<|im_start|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 11, "content": "<|im_end|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 12, "content": "<tool>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": false}
  ],
  "normalizer": null,
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Digits", "individual_digits": true},
    {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}]},
  "post_processor": POST_PROCESSOR,
  "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "ignore_merges": false,
    "vocab": {"h": 0, "e": 1, "l": 2, "o": 3, "\u0120": 4, "he": 5, "ll": 6, "hell": 7, "hello": 8,
              "1": 13, "2": 14, "\u0120hello": 15},
    "merges": ["h e", ["l", "l"], "he ll", "hell o", "\u0120 hello"]}
})";

std::string tiny_tokenizer_json(std::string_view post_processor = "null") {
  std::string json(kTinyTokenizerJson);
  json.replace(json.find("POST_PROCESSOR"), std::string_view("POST_PROCESSOR").size(), post_processor);
  return json;
}

}  // namespace

TEST_CASE("HF tokenizer.json: vocab, both merge forms, added tokens, config special tokens") {
  const TempDir dir("pagedgen-hf-tiny");
  write_file(dir / "tokenizer.json", tiny_tokenizer_json());
  write_file(dir / "tokenizer_config.json", R"({
    "add_bos_token": false,
    "bos_token": "<|im_start|>",
    "eos_token": {"content": "<|im_end|>", "lstrip": false, "special": true},
    "pad_token": null,
    "chat_template": "{% for message in messages %}{{ message.content }}{% endfor %}"
  })");
  write_file(dir / "generation_config.json", R"({"bos_token_id": 10, "eos_token_id": [11, 9]})");

  const auto tokenizer = load_hf_tokenizer(dir.path());
  REQUIRE(dynamic_cast<const BpeTokenizer*>(tokenizer.get()) != nullptr);
  CHECK(tokenizer->vocab_size() == 16);
  CHECK(tokenizer->encode("hello hello", false) == std::vector<TokenId>{8, 15});
  CHECK(tokenizer->encode("hell", false) == std::vector<TokenId>{7});
  CHECK(tokenizer->encode("12", false) == std::vector<TokenId>{13, 14});
  CHECK(tokenizer->encode("<|im_start|>hello<|im_end|>", true) == std::vector<TokenId>{10, 8, 11});
  CHECK(tokenizer->encode("hello<tool>", false) == std::vector<TokenId>{8, 12});  // not special: always
  CHECK(tokenizer->decode(std::vector<TokenId>{10, 8, 15, 11}, false) == "hello hello");
  CHECK(tokenizer->decode(std::vector<TokenId>{10, 8, 15, 11}, true) == "<|im_start|>hello hello<|im_end|>");

  const SpecialTokens& special = tokenizer->special();
  CHECK(special.bos == 10);
  CHECK(special.eos == 11);
  CHECK(special.eot == 11);
  CHECK_FALSE(special.pad.has_value());
  CHECK_FALSE(special.add_bos);
  CHECK(tokenizer->is_end_of_generation(11));
  CHECK(tokenizer->is_end_of_generation(9));
  CHECK_FALSE(tokenizer->is_end_of_generation(10));

  CHECK(hf_chat_template(dir.path()) == "{% for message in messages %}{{ message.content }}{% endfor %}");
}

TEST_CASE("HF tokenizer.json: a TemplateProcessing prefix token means add_bos") {
  const TempDir dir("pagedgen-hf-template");
  write_file(dir / "tokenizer.json", tiny_tokenizer_json(R"({"type": "Sequence", "processors": [
    {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
    {"type": "TemplateProcessing",
     "single": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
     "pair": [], "special_tokens": {}}]})"));
  const auto tokenizer = load_hf_tokenizer(dir.path());
  CHECK(tokenizer->special().bos == 10);
  CHECK(tokenizer->special().add_bos);
  CHECK_FALSE(hf_chat_template(dir.path()).has_value());
}

TEST_CASE("HF chat templates: named list, chat_template.jinja") {
  const TempDir listed("pagedgen-hf-list");
  write_file(listed / "tokenizer_config.json", R"({"chat_template": [
    {"name": "tool_use", "template": "TOOLS"}, {"name": "default", "template": "DEFAULT"}]})");
  CHECK(hf_chat_template(listed.path()) == "DEFAULT");

  const TempDir jinja("pagedgen-hf-jinja");
  write_file(jinja / "tokenizer_config.json", R"({"eos_token": "</s>"})");
  write_file(jinja / "chat_template.jinja", "{{ messages[0].content }}\n");
  CHECK(hf_chat_template(jinja.path()) == "{{ messages[0].content }}\n");
}

TEST_CASE("HF tokenizer.json written from the default model's vocabulary tokenizes like the GGUF") {
  const auto model = default_model();
  if (!model) {
    MESSAGE("skipped: the default model is absent (scripts/fetch-model.sh places it)");
    return;
  }
  const GgufFile gguf(*model);
  const auto from_gguf = load_tokenizer(gguf);
  const auto tokens = *gguf.get_string_array("tokenizer.ggml.tokens");
  const auto types = *gguf.get_int_array("tokenizer.ggml.token_type");
  const auto merges = *gguf.get_string_array("tokenizer.ggml.merges");

  // What SmolLM2's own tokenizer.json holds: every token in model.vocab, the control
  // tokens again as special added_tokens, merges (here in the newer [a, b] form), and
  // single digits split before the byte-level GPT-2 split.
  std::string json = R"({"version": "1.0", "added_tokens": [)";
  bool first = true;
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (types[id] != 3) continue;
    json +=
        fmt::format(R"({}{{"id": {}, "content": {}, "special": true}})", first ? "" : ",", id, json_string(tokens[id]));
    first = false;
  }
  json += R"(], "normalizer": null, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Digits", "individual_digits": true},
    {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}]},
    "post_processor": {"type": "ByteLevel"}, "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {)";
  for (size_t id = 0; id < tokens.size(); ++id) {
    json += fmt::format("{}{}: {}", id == 0 ? "" : ",", json_string(tokens[id]), id);
  }
  json += R"(}, "merges": [)";
  for (size_t i = 0; i < merges.size(); ++i) {
    const size_t space = merges[i].find(' ', 1);
    json += fmt::format("{}[{}, {}]", i == 0 ? "" : ",", json_string(merges[i].substr(0, space)),
                        json_string(merges[i].substr(space + 1)));
  }
  json += "]}}";

  const TempDir dir("pagedgen-hf-smollm");
  write_file(dir / "tokenizer.json", json);
  write_file(dir / "tokenizer_config.json",
             R"({"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "pad_token": "<|im_end|>"})");
  const auto from_hf = load_hf_tokenizer(dir.path());

  CHECK(from_hf->vocab_size() == from_gguf->vocab_size());
  CHECK(from_hf->special().bos == from_gguf->special().bos);
  CHECK(from_hf->special().eos == from_gguf->special().eos);
  CHECK(from_hf->special().pad == from_gguf->special().pad);
  CHECK(from_hf->special().add_bos == from_gguf->special().add_bos);
  CHECK(from_hf->special().end_of_generation == from_gguf->special().end_of_generation);

  std::vector<std::string> texts = {
      "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi 123!<|im_end|>\n",
      "  leading\n\n  spaces\t\ttabs", "Hello \xF0\x9F\xA6\x99 world \xE4\xBD\xA0\xE5\xA5\xBD 1234567"};
  const std::filesystem::path vectors = shared_dir() / "tokenizer-vectors" / "ggml-vocab-starcoder.gguf.inp";
  if (std::filesystem::exists(vectors)) {
    std::ifstream in(vectors, std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    const std::string all = content.str();
    const std::string separator = "\n__ggml_vocab_test__\n";
    for (size_t start = 0, at = all.find(separator); at != std::string::npos;
         start = at + separator.size(), at = all.find(separator, start)) {
      texts.push_back(all.substr(start, at - start));
    }
  }
  size_t same = 0;
  for (const std::string& text : texts) {
    CAPTURE(text);
    const bool equal = from_hf->encode(text, false) == from_gguf->encode(text, false) &&
                       from_hf->encode(text, true) == from_gguf->encode(text, true);
    CHECK(equal);
    same += equal ? 1 : 0;
  }
  MESSAGE("tokenizer.json from the default model: ", same, "/", texts.size(), " texts as through GGUF");
}

TEST_CASE("GGUF loading errors name the file and the key or value") {
  const TempDir dir("pagedgen-gguf-errors");
  const auto write_vocab = [&](const std::string& model, std::optional<std::string> pre, uint64_t bos) {
    GgufWriter writer;
    if (!model.empty()) writer.add("tokenizer.ggml.model", {GgufValueType::STRING, model});
    if (pre) writer.add("tokenizer.ggml.pre", {GgufValueType::STRING, *pre});
    writer.add("tokenizer.ggml.tokens", gguf_array(GgufValueType::STRING, {{GgufValueType::STRING, std::string("a")},
                                                                           {GgufValueType::STRING, std::string("b")}}));
    writer.add("tokenizer.ggml.merges",
               gguf_array(GgufValueType::STRING, {{GgufValueType::STRING, std::string("a b")}}));
    writer.add("tokenizer.ggml.bos_token_id", {GgufValueType::UINT32, bos});
    const std::filesystem::path path = dir / fmt::format("{}-{}-{}.gguf", model, pre.value_or("none"), bos);
    write_file(path, writer.build().bytes);
    return path;
  };
  const auto load_error = [](const std::filesystem::path& path) {
    return load_error_of([&] {
      const GgufFile gguf(path);
      load_tokenizer(gguf);
    });
  };

  const auto bert = write_vocab("bert", std::nullopt, 0);
  std::string message = load_error(bert);
  CHECK(message.find(bert.string()) != std::string::npos);
  CHECK(message.find("'bert'") != std::string::npos);
  CHECK(message.find("'gpt2'") != std::string::npos);

  CHECK(load_error(write_vocab("", std::nullopt, 0)).find("tokenizer.ggml.model") != std::string::npos);
  message = load_error(write_vocab("gpt2", "nonesuch", 0));
  CHECK(message.find("'nonesuch'") != std::string::npos);
  CHECK(message.find("smollm") != std::string::npos);
  message = load_error(write_vocab("gpt2", "gpt-2", 7));
  CHECK(message.find("tokenizer.ggml.bos_token_id = 7") != std::string::npos);
  // A gpt2 vocabulary without tokenizer.ggml.pre is llama.cpp's "default" pre-tokenizer.
  CHECK(load_error(write_vocab("gpt2", std::nullopt, 0)).empty());
}

TEST_CASE("HF loading errors name the directory or file and what is wrong") {
  const TempDir dir("pagedgen-hf-errors");
  CHECK(load_error_of([&] { load_hf_tokenizer(dir / "missing"); }).find("not a directory") != std::string::npos);
  CHECK(load_error_of([&] { load_hf_tokenizer(dir.path()); }).find("tokenizer.json") != std::string::npos);

  write_file(dir / "tokenizer.json", "{\"model\": {\"type\": \"BPE\", ");
  std::string message = load_error_of([&] { load_hf_tokenizer(dir.path()); });
  CHECK(message.find((dir / "tokenizer.json").string()) != std::string::npos);
  CHECK(message.find("JSON") != std::string::npos);

  const auto replace = [](std::string text, std::string_view from, std::string_view to) {
    return text.replace(text.find(from), from.size(), to);
  };
  std::string json =
      replace(tiny_tokenizer_json(), R"("Digits", "individual_digits": true)", R"("Metaspace", "replacement": "x")");
  write_file(dir / "tokenizer.json", json);
  message = load_error_of([&] { load_hf_tokenizer(dir.path()); });
  CHECK(message.find("'Metaspace'") != std::string::npos);
  CHECK(message.find("pre_tokenizer.pretokenizers[0]") != std::string::npos);

  json = replace(tiny_tokenizer_json(), R"("type": "BPE")", R"("type": "WordPiece")");
  write_file(dir / "tokenizer.json", json);
  CHECK(load_error_of([&] { load_hf_tokenizer(dir.path()); }).find("'WordPiece'") != std::string::npos);

  // A tokenizer.model that is not SentencePiece, next to a usable tokenizer.json.
  write_file(dir / "tokenizer.json", tiny_tokenizer_json());
  write_file(dir / "tokenizer.model", "IQ== 0\nIg== 1\n");
  CHECK(load_hf_tokenizer(dir.path())->encode("hello", false) == std::vector<TokenId>{8});
}

// Found by fuzz_hf_tokenizer (tests/fuzz): libsentencepiece's unigram trie builder
// reads pieces as NUL-terminated keys and throws a Darts exception ("zero-length key") for
// one that starts with a NUL byte, which ended the process (std::terminate) instead of
// refusing the file.
TEST_CASE("a SentencePiece vocabulary with a piece starting with NUL is an Error naming the file") {
  const TempDir dir("pagedgen-spm-empty-piece");
  SpmModel model;
  model.model_type = SpmModelType::Unigram;  // whose trie builder throws
  model.pieces = {{"<unk>", 0.0f, TokenType::Unknown},
                  {"<s>", 0.0f, TokenType::Control},
                  {"</s>", 0.0f, TokenType::Control},
                  {std::string("\0a", 2), -1.0f, TokenType::Normal},
                  {"a", -2.0f, TokenType::Normal}};
  write_file(dir / "tokenizer.model", serialize_spm_model(model));
  std::string message = load_error_of([&] { load_hf_tokenizer(dir.path()); });
  CHECK(message.find((dir / "tokenizer.model").string()) != std::string::npos);
  CHECK(message.find("libsentencepiece rejected the vocabulary") != std::string::npos);
}
