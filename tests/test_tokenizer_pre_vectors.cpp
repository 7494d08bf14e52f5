// GGUF pre-tokenizers against reference ids, two ways:
//  - llama.cpp's vocabularies for deepseek-llm, deepseek-coder, falcon, llama-bpe, qwen2,
//    qwen35, mpt, refact and command-r with their .inp/.out vectors (made by HF tokenizers),
//    rebuilt at test time from tests/data/tokenizer-vectors/NAME.vocab (the tokens and
//    merges those vectors can reach; reduce_vocab.py says why that tokenizes the same);
//  - every tokenizer.ggml.pre name pagedgen knows, set on ../shared's gpt-2 vocabulary,
//    against llama-cpp-python's ids (tokenizer-vectors/pre, make_pre_vectors.py), except
//    where llama.cpp only approximates tokenizer.json's pattern: there HF tokenizers' ids
//    (pre/hf.out, hf_check.py, which also checks that HF agrees on every other text).
#include <doctest/doctest.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "gguf_writer.h"
#include "model/gguf.h"
#include "test_paths.h"
#include "token_id_text.h"
#include "tokenizer/gguf_pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_loader.h"
#include "util/error.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

const std::filesystem::path kVectorsDir = data_dir() / "tokenizer-vectors";

// The .vocab field escapes: "\\", "\s" (space), "\xHH".
std::string unescape(std::string_view field) {
  std::string text;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] != '\\') {
      text.push_back(field[i]);
    } else if (field.substr(i, 2) == "\\\\") {
      text.push_back('\\');
      ++i;
    } else if (field.substr(i, 2) == "\\s") {
      text.push_back(' ');
      ++i;
    } else if (field.substr(i, 2) == "\\x" && i + 3 < field.size()) {
      text.push_back(static_cast<char>(std::stoi(std::string(field.substr(i + 2, 2)), nullptr, 16)));
      i += 3;
    } else {
      FAIL("bad escape in '", std::string(field), "'");
    }
  }
  return text;
}

GgufValue string_value(std::string text) { return {GgufValueType::STRING, std::move(text)}; }

// A GGUF vocabulary from a .vocab file: its tokenizer.ggml.* keys, its tokens at their
// ids, "[unused N]" (type unused) at every other id, its merges in order.
std::vector<std::byte> vocab_gguf(const std::filesystem::path& path) {
  std::istringstream lines(read_file(path));
  GgufWriter writer;
  writer.add("general.architecture", string_value("gpt2"));
  std::vector<GgufValue> tokens;
  std::vector<GgufValue> types;
  std::vector<GgufValue> merges;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "key") {
      std::string key, type, value;
      fields >> key >> type;
      std::getline(fields >> std::ws, value);
      if (type == "str") writer.add(key, string_value(unescape(value)));
      if (type == "bool") writer.add(key, {GgufValueType::BOOL, value == "true"});
      if (type == "u32") writer.add(key, {GgufValueType::UINT32, uint64_t{std::stoul(value)}});
      if (type == "i32") writer.add(key, {GgufValueType::INT32, int64_t{std::stol(value)}});
    } else if (kind == "num_tokens") {
      size_t count = 0;
      fields >> count;
      for (size_t id = 0; id < count; ++id) {
        tokens.push_back(string_value("[unused " + std::to_string(id) + "]"));
        types.push_back({GgufValueType::INT32, int64_t{5}});
      }
    } else if (kind == "token") {
      size_t id = 0;
      int64_t type = 0;
      fields >> id >> type;
      std::string text;
      if (fields.get() == ' ') std::getline(fields, text);
      REQUIRE(id < tokens.size());
      tokens[id] = string_value(unescape(text));
      types[id] = {GgufValueType::INT32, type};
    } else if (kind == "merge") {
      std::string text;
      fields >> text;
      merges.push_back(string_value(unescape(text)));
    } else {
      FAIL("unknown line in ", path.string(), ": ", line);
    }
  }
  writer.add("tokenizer.ggml.tokens", gguf_array(GgufValueType::STRING, std::move(tokens)));
  writer.add("tokenizer.ggml.token_type", gguf_array(GgufValueType::INT32, std::move(types)));
  writer.add("tokenizer.ggml.merges", gguf_array(GgufValueType::STRING, std::move(merges)));
  return writer.build().bytes;
}

// `source`'s metadata with tokenizer.ggml.pre set to `pre`.
std::vector<std::byte> with_pre(const GgufFile& source, std::string_view pre) {
  GgufWriter writer;
  bool had_pre = false;
  for (const auto& [key, value] : source.metadata()) {
    if (key == "tokenizer.ggml.pre") {
      writer.add(key, string_value(std::string(pre)));
      had_pre = true;
    } else {
      writer.add(key, value);
    }
  }
  if (!had_pre) writer.add("tokenizer.ggml.pre", string_value(std::string(pre)));
  return writer.build().bytes;
}

// Encodes every text; returns how many gave exactly the expected ids (failing each other).
size_t count_exact(const Tokenizer& tokenizer, const std::vector<std::string>& texts,
                   const std::vector<std::vector<TokenId>>& expected) {
  REQUIRE(texts.size() == expected.size());
  size_t exact = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::vector<TokenId> ids = tokenizer.encode(texts[i], /*parse_special=*/false);
    if (ids == expected[i]) {
      ++exact;
    } else {
      FAIL_CHECK("text ", i, " '", texts[i], "': expected [", join_token_ids(expected[i]), "] got [", join_token_ids(ids), "]");
    }
  }
  return exact;
}

}  // namespace

TEST_CASE("llama.cpp's vocabularies with vectors, rebuilt from their reduced form: exact ids, decoding back") {
  const char* names[] = {"deepseek-llm", "deepseek-coder", "falcon",   "llama-bpe", "qwen2", "qwen35",
                         "mpt",          "refact",         "command-r"};
  const TempDir tmp("pagedgen-vocab");
  for (const std::string name : names) {
    CAPTURE(name);
    const std::filesystem::path file = tmp / (name + ".gguf");
    write_file(file, vocab_gguf(kVectorsDir / (name + ".vocab")));
    const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(GgufFile(file));
    const std::vector<std::string> texts = read_vocab_test_texts(kVectorsDir / (name + ".inp"));
    const auto expected = read_token_id_lines(kVectorsDir / (name + ".out"));
    const size_t exact = count_exact(*tokenizer, texts, expected);
    size_t decoded = 0;
    for (size_t i = 0; i < texts.size(); ++i) decoded += tokenizer->decode(expected[i], false) == texts[i];
    MESSAGE(name, ": ", exact, "/", texts.size(), " exact, ", decoded, "/", texts.size(), " decoded back");
    CHECK(exact == texts.size());
    CHECK(decoded == texts.size());
  }
}

TEST_CASE("every tokenizer.ggml.pre name on the gpt-2 vocabulary gives llama-cpp-python's ids") {
  const std::filesystem::path gpt2 = shared_dir() / "tokenizer-vectors" / "ggml-vocab-gpt-2.gguf";
  if (!std::filesystem::exists(gpt2)) {
    MESSAGE("skipped: ", gpt2.string(), " is absent (the llama.cpp tokenizer vectors live there)");
    return;
  }
  const GgufFile source(gpt2);
  const std::filesystem::path dir = kVectorsDir / "pre";
  const std::vector<std::string> texts = read_vocab_test_texts(dir / "texts.inp");
  // HF tokenizers' ids where llama.cpp's approximation differs: "NAME TEXT_INDEX ids".
  std::map<std::pair<std::string, size_t>, std::vector<TokenId>> hf_ids;
  std::istringstream hf_lines(read_file(dir / "hf.out"));
  for (std::string line; std::getline(hf_lines, line);) {
    std::istringstream fields(line);
    std::string name;
    size_t index = 0;
    fields >> name >> index;
    std::vector<TokenId>& ids = hf_ids[{name, index}];
    for (TokenId id = 0; fields >> id;) ids.push_back(id);
  }
  REQUIRE(hf_ids.size() == 7);
  std::vector<std::string> checked;
  std::istringstream families(read_file(dir / "names.txt"));
  const TempDir tmp("pagedgen-pre");
  for (std::string line; std::getline(families, line);) {
    std::istringstream fields(line);
    std::string out_file;
    fields >> out_file;
    const auto llama_cpp_ids = read_token_id_lines(dir / out_file);
    for (std::string name; fields >> name;) {
      CAPTURE(name);
      auto expected = llama_cpp_ids;
      for (const auto& [key, ids] : hf_ids)
        if (key.first == name) expected.at(key.second) = ids;
      const std::filesystem::path file = tmp / (name + ".gguf");
      write_file(file, with_pre(source, name));
      const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(GgufFile(file));
      CHECK(count_exact(*tokenizer, texts, expected) == texts.size());
      checked.push_back(name);
    }
  }
  // The vectors cover exactly the names pagedgen accepts.
  std::vector<std::string> supported;
  for (const std::string_view name : supported_gguf_pre_names()) supported.emplace_back(name);
  std::sort(checked.begin(), checked.end());
  std::sort(supported.begin(), supported.end());
  CHECK(fmt::format("{}", fmt::join(checked, " ")) == fmt::format("{}", fmt::join(supported, " ")));
  MESSAGE(checked.size(), " names x ", texts.size(), " texts checked");
}

TEST_CASE("a tokenizer.ggml.pre llama.cpp knows but pagedgen does not stays an Error naming it") {
  const TempDir tmp("pagedgen-pre-unknown");
  const std::filesystem::path falcon_file = tmp / "falcon.gguf";
  write_file(falcon_file, vocab_gguf(kVectorsDir / "falcon.vocab"));
  const std::filesystem::path file = tmp / "kimi.gguf";
  write_file(file, with_pre(GgufFile(falcon_file), "kimi-k2"));
  try {
    load_tokenizer(GgufFile(file));
    FAIL("no error");
  } catch (const Error& e) {
    const std::string message = e.what();
    CHECK(message.find("'kimi-k2' is not a pre-tokenizer pagedgen knows") != std::string::npos);
    CHECK(message.find(file.string()) != std::string::npos);
    CHECK(message.find("deepseek-v3") != std::string::npos);
  }
}
