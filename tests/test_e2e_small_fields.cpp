// vLLM's small request fields end to end on the default model, one `generate` run per
// format (greedy unless said):
//   - include_stop_str_in_output: a stop string ends the text instead of being cut, and a
//     stop token id's text is kept ("." as stop string and as stop id);
//   - skip_special_tokens false: <|im_end|> and <|im_start|> appear in the text (the text
//     without them is the default one), spaces_between_special_tokens false changes
//     nothing, and with include_stop_str_in_output the end-of-turn token ends the text;
//   - bad_words: greedy avoids " Paris" and then "the capital"; sampled n = 3 never picks
//     a banned id (their ids from logprobs);
//   - allowed_token_ids: only the allowed ids are picked (sampled, n = 3), and with a
//     response_format the output is the one choice the ids can write; ids that leave no
//     token (end-of-generation ids held back by min_tokens) give an invalid_value record;
//   - truncate_prompt_tokens: usage.prompt_tokens becomes k (plain and chat), -1 keeps a
//     short prompt whole;
//   - the same fields in OpenAI batch bodies (chat and completions).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "loader/model_files.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

namespace fs = std::filesystem;

constexpr const char* kFranceFields = R"("prompt": "The capital of France is", "max_tokens": 8, "temperature": 0)";
constexpr const char* kChat = R"("messages": [{"role": "user", "content": "Say hi."}], "temperature": 0)";

struct Choice {
  std::string text;
  std::string finish_reason;
  std::vector<int64_t> ids;  // from logprobs, when asked
};

struct OutputLine {
  std::vector<Choice> choices;
  int64_t prompt_tokens = 0;
  std::string error;  // "code: message"
};

Choice read_choice(simdjson::dom::element choice) {
  Choice c;
  c.text = std::string(choice["text"].get_string().value());
  c.finish_reason = std::string(choice["finish_reason"].get_string().value());
  simdjson::dom::array logprobs;
  if (choice["logprobs"].get_array().get(logprobs) == simdjson::SUCCESS)
    for (simdjson::dom::element entry : logprobs) c.ids.push_back(entry["id"].get_int64().value());
  return c;
}

// The plain output lines by id.
std::map<std::string, OutputLine> run_plain(const fs::path& dir, const std::vector<std::string>& lines) {
  std::string input;
  for (const std::string& line : lines) input += line + "\n";
  std::ofstream(dir / "in.jsonl") << input;
  const CliResult result = run_pagedgen(
      fmt::format("generate -q --seed 5 -i {} -o {}", sh_quote(dir / "in.jsonl"), sh_quote(dir / "out.jsonl")),
      dir / "err.txt");
  REQUIRE_MESSAGE(result.exit_code == 1, result.stderr_text);  // 1: a line is an error record
  simdjson::dom::parser parser;
  std::map<std::string, OutputLine> out;
  for (const std::string& text : complete_lines(read_file(dir / "out.jsonl"))) {
    const simdjson::dom::element json = parser.parse(text);
    OutputLine& line = out[std::string(json["id"].get_string().value())];
    simdjson::dom::element error;
    if (json["error"].get(error) == simdjson::SUCCESS) {
      line.error = fmt::format("{}: {}", std::string_view(error["code"]), std::string_view(error["message"]));
      continue;
    }
    line.prompt_tokens = json["usage"]["prompt_tokens"].get_int64().value();
    simdjson::dom::array choices;
    if (json["choices"].get_array().get(choices) == simdjson::SUCCESS) {
      for (simdjson::dom::element choice : choices) line.choices.push_back(read_choice(choice));
    } else {
      line.choices.push_back(read_choice(json));
    }
  }
  REQUIRE(out.size() == lines.size());
  return out;
}

std::string line(const std::string& id, const std::string& fields) {
  return fmt::format(R"({{"id": "{}", {}}})", id, fields);
}

std::string without(std::string text, const std::string& piece) {
  for (std::size_t at = text.find(piece); at != std::string::npos; at = text.find(piece)) text.erase(at, piece.size());
  return text;
}

}  // namespace

TEST_CASE("small fields on plain lines: stop strings kept, special tokens shown, bad and allowed tokens, truncation") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const ModelFiles files(*default_model());
  const Tokenizer& tokenizer = files.tokenizer();
  const std::string eog = fmt::format("{}", fmt::join(tokenizer.special().end_of_generation, ", "));
  const TokenId paris = tokenizer.encode(" Paris", false).at(0);
  const std::vector<TokenId> no = tokenizer.encode("\"no\"", false);
  const fs::path dir = fs::temp_directory_path() / fmt::format("pagedgen-small-fields-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::map<std::string, OutputLine> out = run_plain(
      dir,
      {line("base", kFranceFields), line("cut", fmt::format(R"({}, "stop": ["."])", kFranceFields)),
       line("kept", fmt::format(R"({}, "stop": ["."], "include_stop_str_in_output": true)", kFranceFields)),
       line("id_cut", fmt::format(R"({}, "stop_token_ids": [30])", kFranceFields)),
       line("id_kept", fmt::format(R"({}, "stop_token_ids": [30], "include_stop_str_in_output": true)", kFranceFields)),
       line("hidden", fmt::format(R"({}, "max_tokens": 40, "ignore_eos": true)", kChat)),
       line("shown", fmt::format(R"({}, "max_tokens": 40, "ignore_eos": true, "skip_special_tokens": false)", kChat)),
       line("unspaced", fmt::format(R"({}, "max_tokens": 40, "ignore_eos": true, "skip_special_tokens": false, )"
                                    R"("spaces_between_special_tokens": false)",
                                    kChat)),
       line("turn", fmt::format(R"({}, "max_tokens": 40)", kChat)),
       line("turn_kept", fmt::format(R"({}, "max_tokens": 40, "skip_special_tokens": false, )"
                                     R"("include_stop_str_in_output": true)",
                                     kChat)),
       line("bad_greedy", fmt::format(R"({}, "bad_words": ["Paris", "the capital"])", kFranceFields)),
       line("bad_sampled", R"("prompt": "The capital of France is", "max_tokens": 8, "n": 3, "logprobs": 0, )"
                           R"("bad_words": ["Paris", "London"])"),
       line("allowed", R"("prompt": "The capital of France is", "max_tokens": 8, "n": 3, "logprobs": 0, )"
                       R"("allowed_token_ids": [260, 7042, 30, 198])"),
       line("allowed_format",
            fmt::format(R"("prompt": "Yes or no?", "max_tokens": 8, "temperature": 0, "allowed_token_ids": [{}, {}], )"
                        R"("response_format": {{"type": "json_schema", "json_schema": {{"name": "a", )"
                        R"("schema": {{"enum": ["yes", "no"]}}}}}})",
                        fmt::join(no, ", "), eog)),
       line("no_token",
            fmt::format(R"("prompt": "Hi", "max_tokens": 4, "min_tokens": 1, "allowed_token_ids": [{}])", eog)),
       line("truncated", fmt::format(R"({}, "truncate_prompt_tokens": 2)", kFranceFields)),
       line("truncated_chat", fmt::format(R"({}, "max_tokens": 2, "truncate_prompt_tokens": 3)", kChat)),
       line("whole", fmt::format(R"({}, "truncate_prompt_tokens": -1)", kFranceFields))});

  const std::string base = out.at("base").choices.at(0).text;
  REQUIRE(base.starts_with(" Paris."));
  CHECK(out.at("cut").choices.at(0).text == " Paris");
  CHECK(out.at("kept").choices.at(0).text == " Paris.");
  CHECK(out.at("kept").choices.at(0).finish_reason == "stop");
  CHECK(out.at("id_cut").choices.at(0).text == " Paris");
  CHECK(out.at("id_kept").choices.at(0).text == " Paris.");

  const std::string shown = out.at("shown").choices.at(0).text;
  CHECK(shown.find("<|im_end|>") != std::string::npos);
  CHECK(out.at("hidden").choices.at(0).text.find("<|im_end|>") == std::string::npos);
  CHECK(without(without(shown, "<|im_end|>"), "<|im_start|>") == out.at("hidden").choices.at(0).text);
  CHECK(out.at("unspaced").choices.at(0).text == shown);
  CHECK(out.at("turn_kept").choices.at(0).text == out.at("turn").choices.at(0).text + "<|im_end|>");
  CHECK(out.at("turn_kept").choices.at(0).finish_reason == "stop");

  const std::string bad_greedy = out.at("bad_greedy").choices.at(0).text;
  CHECK(bad_greedy.find("Paris") == std::string::npos);
  CHECK(bad_greedy.find("the capital") == std::string::npos);
  const std::vector<TokenId> london = tokenizer.encode(" London", false);
  REQUIRE(london.size() == 1);
  REQUIRE(out.at("bad_sampled").choices.size() == 3);
  for (const Choice& choice : out.at("bad_sampled").choices) {
    CHECK(choice.ids.size() == 8);
    for (const int64_t id : choice.ids) CHECK((id != paris && id != london[0]));
  }
  const std::set<int64_t> allowed = {260, 7042, 30, 198};
  REQUIRE(out.at("allowed").choices.size() == 3);
  std::set<int64_t> picked;
  for (const Choice& choice : out.at("allowed").choices)
    for (const int64_t id : choice.ids) picked.insert(id);
  CHECK(std::includes(allowed.begin(), allowed.end(), picked.begin(), picked.end()));
  CHECK(picked.size() > 1);
  CHECK(out.at("allowed_format").choices.at(0).text == "\"no\"");
  CHECK(out.at("no_token").error.starts_with("invalid_value: no token may be picked after 0 generated tokens"));

  CHECK(out.at("truncated").prompt_tokens == 2);
  CHECK(out.at("truncated_chat").prompt_tokens == 3);
  CHECK(out.at("whole").prompt_tokens == out.at("base").prompt_tokens);
  CHECK(out.at("whole").choices.at(0).text == base);
  fs::remove_all(dir);
}

TEST_CASE("small fields in OpenAI batch bodies") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const fs::path dir = fs::temp_directory_path() / fmt::format("pagedgen-small-fields-openai-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "in.jsonl")
      << R"({"custom_id": "chat", "method": "POST", "url": "/v1/chat/completions", "body": {"messages": )"
         R"([{"role": "user", "content": "Say hi."}], "temperature": 0, "max_tokens": 40, )"
         R"("skip_special_tokens": false, "include_stop_str_in_output": true}})"
         "\n"
         R"({"custom_id": "cmpl", "method": "POST", "url": "/v1/completions", "body": {"prompt": )"
         R"("The capital of France is", "temperature": 0, "max_tokens": 4, "truncate_prompt_tokens": 3, )"
         R"("bad_words": ["Paris"], "stop": ["."], "include_stop_str_in_output": true}})"
         "\n";
  const CliResult result = run_pagedgen(
      fmt::format("generate -q --format openai -i {} -o {}", sh_quote(dir / "in.jsonl"), sh_quote(dir / "out.jsonl")),
      dir / "err.txt");
  REQUIRE_MESSAGE(result.exit_code == 0, result.stderr_text);
  const std::vector<std::string> lines = complete_lines(read_file(dir / "out.jsonl"));
  REQUIRE(lines.size() == 2);
  simdjson::dom::parser parser;
  const simdjson::dom::element chat = parser.parse(lines[0]);
  const std::string content(chat["response"]["body"]["choices"].at(0)["message"]["content"].get_string().value());
  CHECK(content.ends_with("<|im_end|>"));
  const simdjson::dom::element cmpl = parser.parse(lines[1]);
  CHECK(cmpl["response"]["body"]["usage"]["prompt_tokens"].get_int64().value() == 3);
  const std::string text(cmpl["response"]["body"]["choices"].at(0)["text"].get_string().value());
  CHECK(text.find("Paris") == std::string::npos);
  fs::remove_all(dir);
}
