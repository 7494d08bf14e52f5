// Hostile input end to end: request lines that once crashed the whole job (a raw control
// character, an unclosed string, deep nesting) become error lines among the good ones, in
// both formats and from stdin; model files whose dimensions multiply past 2^63 end `plan`
// and `inspect` with exit 3 and one message naming the key, never a signal.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "io/output_format.h"
#include "model/gguf.h"
#include "test_paths.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

std::vector<std::string> read_lines(const std::filesystem::path& path) {
  std::istringstream text(read_file(path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  return lines;
}

// The request lines a good line of each format is made of.
std::string good_line(bool openai, std::string_view id) {
  if (openai)
    return fmt::format(R"({{"custom_id": "{}", "method": "POST", "url": "/v1/completions", "body": {{"prompt": "Hi", )"
                       R"("max_tokens": 1}}}})",
                       id);
  return fmt::format(R"({{"id": "{}", "prompt": "Hi", "max_tokens": 1}})", id);
}

struct HostileLine {
  const char* name;
  std::string text;     // the middle line, in the plain format; see as_format
  const char* message;  // what its error message says
};

std::vector<HostileLine> hostile_lines() {
  std::string deep;
  for (int i = 0; i < 25000; ++i) deep += '[';
  for (int i = 0; i < 25000; ++i) deep += ']';
  return {
      {"raw control character",
       std::string("{\"id\": \"b\", \"prompt\": \"a\x01"
                   "b\", \"max_tokens\": 1}"),
       "a control character (0x00-0x1F) in a string must be escaped"},
      {"raw NUL byte", std::string("{\"id\": \"b\", \"prompt\": \"a") + '\0' + "b\", \"max_tokens\": 1}",
       "a control character (0x00-0x1F) in a string must be escaped"},
      {"unclosed string", "{\"id\": \"b\", \"prompt\": \"abc", "a string is never closed"},
      {"25,000 nested lists", "{\"id\": \"b\", \"prompt\": \"Hi\", \"ignored\": " + deep + "}",
       "nests objects and lists deeper than 128 levels"},
  };
}

// The OpenAI batch form of a hostile plain line: the same trouble inside a body.
std::string as_format(const HostileLine& line, bool openai) {
  if (!openai) return line.text;
  const std::string body = line.text.substr(line.text.find("\"prompt\""));
  return R"({"custom_id": "b", "method": "POST", "url": "/v1/completions", "body": {)" + body +
         (line.text.back() == '}' ? "}" : "");
}

}  // namespace

// Each of these lines once crashed `generate` (SIGSEGV) and wrote 0 lines; `--resume`
// crashed again every time.
TEST_CASE("a hostile middle line is an invalid_json line between two answered ones, both formats, file and stdin") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  TempDir dir("pagedgen-e2e-hostile");
  for (const bool openai : {false, true}) {
    for (const HostileLine& hostile : hostile_lines()) {
      for (const bool from_stdin : {false, true}) {
        CAPTURE(openai);
        CAPTURE(std::string(hostile.name));
        CAPTURE(from_stdin);
        const auto input = dir / "in.jsonl";
        const auto out = dir / "out.jsonl";
        std::filesystem::remove(out);
        write_file(input,
                   good_line(openai, "a") + "\n" + as_format(hostile, openai) + "\n" + good_line(openai, "c") + "\n");
        const std::string source =
            from_stdin ? fmt::format("-i - < '{}'", input.string()) : fmt::format("-i '{}'", input.string());
        const CliResult r =
            run_pagedgen(fmt::format("generate -q --device cpu {} -o '{}'", source, out.string()), dir / "stderr.txt");
        CAPTURE(r.stderr_text);
        CHECK(r.exit_code == 1);  // some line failed; no signal
        const std::vector<std::string> lines = read_lines(out);
        REQUIRE(lines.size() == 3);
        for (uint64_t index = 0; index < 3; ++index) {
          const std::optional<OutputLineInfo> info = read_output_line(lines[index]);
          REQUIRE(info.has_value());
          CHECK(info->index == index);
          CHECK(info->is_error == (index == 1));
        }
        CHECK(lines[1].find("\"invalid_json\"") != std::string::npos);
        CHECK(lines[1].find(hostile.message) != std::string::npos);
      }
    }
  }
}

TEST_CASE("plan reports hostile lines as invalid instead of crashing") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  TempDir dir("pagedgen-e2e-hostile-plan");
  for (const HostileLine& hostile : hostile_lines()) {
    CAPTURE(std::string(hostile.name));
    const auto input = dir / "in.jsonl";
    const auto json = dir / "plan.json";
    write_file(input, good_line(false, "a") + "\n" + hostile.text + "\n" + good_line(false, "c") + "\n");
    const CliResult r =
        run_pagedgen(fmt::format("plan -i '{}' --json '{}'", input.string(), json.string()), dir / "stderr.txt");
    CAPTURE(r.stderr_text);
    CHECK(r.exit_code == 1);  // a line is invalid
    const std::string text = read_file(json);
    CHECK(text.find("\"lines\": 3, \"blank_lines\": 0, \"requests\": 3, \"invalid_requests\": 1") != std::string::npos);
    CHECK(text.find("{\"index\": 1, \"id\": null, \"code\": \"invalid_json\"") != std::string::npos);
  }
}

namespace {

// Exit code 3, one stderr line "pagedgen: error: ..." holding every word.
void expect_model_error(const CliResult& r, std::initializer_list<std::string_view> words) {
  CAPTURE(r.stderr_text);
  CHECK(r.exit_code == 3);
  CHECK(r.stderr_text.rfind("pagedgen: error: ", 0) == 0);
  CHECK(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n') == 1);
  for (const std::string_view word : words)
    CHECK_MESSAGE(r.stderr_text.find(word) != std::string::npos, "expected '", word, "'");
}

// A tokenizer.json of 4 tokens, enough for an HF directory to load.
constexpr std::string_view kTinyTokenizerJson = R"({
  "version": "1.0", "added_tokens": [], "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor": null,
  "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "vocab": {"H": 0, "i": 1, "Hi": 2, "\u0120": 3},
            "merges": ["H i"]}})";

}  // namespace

// 2 x 2^31 layers x ... used to wrap to 0 KV bytes per token: `plan` divided by zero
// (SIGFPE) and `inspect` printed "0 bytes per token".
TEST_CASE("plan and inspect on a model whose dimensions are 2^31 exit 3 naming the key") {
  TempDir dir("pagedgen-e2e-huge-dims");
  const auto input = dir / "in.jsonl";
  write_file(input, good_line(false, "a") + "\n");

  SUBCASE("config.json") {
    const auto model = dir / "hf";
    std::filesystem::create_directory(model);
    write_file(model / "config.json", R"({"model_type": "llama", "num_hidden_layers": 2147483648,
        "hidden_size": 2147483648, "intermediate_size": 128, "num_attention_heads": 1, "num_key_value_heads": 1,
        "vocab_size": 4, "max_position_embeddings": 64})");
    write_file(model / "model.safetensors", std::string("\x02\0\0\0\0\0\0\0{}", 10));
    write_file(model / "tokenizer.json", kTinyTokenizerJson);
    const std::initializer_list<std::string_view> words = {"config.json", "'num_hidden_layers' is 2147483648"};
    expect_model_error(run_pagedgen(fmt::format("inspect -m '{}'", model.string()), dir / "stderr.txt"), words);
    expect_model_error(
        run_pagedgen(fmt::format("plan -m '{}' -i '{}'", model.string(), input.string()), dir / "stderr.txt"), words);
  }
  SUBCASE("GGUF") {
    PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
    // The default model's metadata (its vocabulary included), no tensors, two keys changed.
    const GgufFile original(*default_model());
    GgufWriter writer;
    for (const auto& [key, value] : original.metadata()) {
      if (key == "llama.block_count" || key == "llama.embedding_length")
        writer.add(key, {GgufValueType::UINT64, uint64_t{1} << 31});
      else
        writer.add(key, value);
    }
    const auto model = dir / "huge.gguf";
    write_file(model, writer.build().bytes);
    const std::string model_path = model.string();
    const std::initializer_list<std::string_view> words = {model_path,
                                                           "metadata key 'llama.block_count' is 2147483648"};
    expect_model_error(run_pagedgen(fmt::format("inspect -m '{}'", model.string()), dir / "stderr.txt"), words);
    expect_model_error(
        run_pagedgen(fmt::format("plan -m '{}' -i '{}'", model.string(), input.string()), dir / "stderr.txt"), words);
  }
}
