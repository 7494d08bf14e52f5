// Log probabilities and penalties end to end on the default model.
//   - logprobs: `pagedgen generate` on a plain file and on an OpenAI batch file (a
//     completion and a chat request with n = 2, sampled). Every generated token's logprob
//     and its top-k equal, within 1e-5, a plain double log-softmax of the logits the CPU
//     backend computes here for the same tokens (teacher forcing on the fast path, whose
//     logits have the same bits at any chunking and batching), the top-k in order; the
//     OpenAI lines carry the plain lines' values, tokens and bytes.
//   - penalties: frequency/presence, repetition and logit_bias each change a greedy output,
//     logit_bias -100 bans the token greedy picked, and the output files are the same bytes
//     at block sizes 8 and 32 and with prefix sharing off but for cached_tokens (n = 3
//     forks included).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "cpu/cpu_backend.h"
#include "gguf_writer.h"
#include "io/request_parser.h"
#include "job/prompt_builder.h"
#include "loaded_model.h"
#include "paged_batch_builder.h"
#include "test_paths.h"
#include "model_chat_template.h"
#include "tokenizer/utf8.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

namespace fs = std::filesystem;

// Local copies: a range-for over .value() of a temporary result would dangle.
simdjson::dom::array array_of(simdjson::dom::element element) {
  simdjson::dom::array array;
  REQUIRE(element.get_array().get(array) == simdjson::SUCCESS);
  return array;
}

simdjson::dom::object object_of(simdjson::dom::element element) {
  simdjson::dom::object object;
  REQUIRE(element.get_object().get(object) == simdjson::SUCCESS);
  return object;
}

struct Entry {
  TokenId id = 0;
  std::string token;
  double logprob = 0.0;
  std::vector<std::pair<TokenId, double>> top;
  std::vector<std::string> top_tokens;
};

// The "logprobs" list of a plain choice.
std::vector<Entry> plain_entries(simdjson::dom::element choice) {
  std::vector<Entry> entries;
  for (simdjson::dom::element e : array_of(choice["logprobs"])) {
    Entry entry;
    entry.id = static_cast<TokenId>(e["id"].get_int64().value());
    entry.token = std::string(e["token"].get_string().value());
    entry.logprob = e["logprob"].get_double().value();
    for (simdjson::dom::element t : array_of(e["top_logprobs"])) {
      entry.top.emplace_back(static_cast<TokenId>(t["id"].get_int64().value()), t["logprob"].get_double().value());
      entry.top_tokens.emplace_back(t["token"].get_string().value());
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

// The logits row before each generated token: the prompt prefilled, then the generated
// tokens one at a time, on a fresh fast-path CPU backend (the CLI's default form).
std::vector<std::vector<float>> teacher_forced_logits(const LoadedModel& model, const std::vector<TokenId>& prompt,
                                                      const std::vector<TokenId>& generated) {
  const ModelConfig& config = model.files.config();
  const auto vocab = static_cast<std::size_t>(config.vocab_size);
  CpuBackend backend(config, model.weights, 2, cpu::best_cpu_isa(), KvDtype::kFloat16);
  backend.allocate_kv_pool(64, 16);
  PagedBatchBuilder builder(16, 64, 5);
  const std::size_t seq = builder.add_sequence();
  std::vector<std::vector<float>> rows;
  std::vector<TokenId> chunk = prompt;
  for (std::size_t i = 0; i < generated.size(); ++i) {
    std::vector<float> logits(vocab);
    backend.forward(builder.step({{seq, chunk}}), logits);
    rows.push_back(std::move(logits));
    chunk = {generated[i]};
  }
  return rows;
}

// Checks the entries against log-softmax of the rows, in double: value within 1e-5, top-k
// the k best ids (higher logit first, lower id on ties).
void check_against_logits(const std::vector<Entry>& entries, const std::vector<std::vector<float>>& rows, std::size_t k,
                          const Tokenizer& tokenizer) {
  REQUIRE(entries.size() == rows.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    CAPTURE(i);
    const std::vector<float>& row = rows[i];
    const double max = *std::max_element(row.begin(), row.end());
    double sum = 0.0;
    for (const float logit : row) sum += std::exp(static_cast<double>(logit) - max);
    const auto log_softmax = [&](TokenId id) { return row[static_cast<std::size_t>(id)] - max - std::log(sum); };
    CHECK(std::abs(entries[i].logprob - log_softmax(entries[i].id)) <= 1e-5);
    const std::string bytes = tokenizer.token_bytes(entries[i].id, true);
    if (utf8_is_valid(bytes)) CHECK(entries[i].token == bytes);  // else U+FFFD stands for the split character
    std::vector<TokenId> order(row.size());
    for (std::size_t id = 0; id < row.size(); ++id) order[id] = static_cast<TokenId>(id);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](TokenId a, TokenId b) {
                        return row[static_cast<std::size_t>(a)] > row[static_cast<std::size_t>(b)] ||
                               (row[static_cast<std::size_t>(a)] == row[static_cast<std::size_t>(b)] && a < b);
                      });
    REQUIRE(entries[i].top.size() == k);
    for (std::size_t j = 0; j < k; ++j) {
      CHECK(entries[i].top[j].first == order[j]);
      CHECK(std::abs(entries[i].top[j].second - log_softmax(order[j])) <= 1e-5);
    }
  }
}

constexpr const char* kColorsPrompt = "The three primary colors are";
constexpr const char* kMessages = R"([{"role": "user", "content": "Name a fruit and say why you like it."}])";

}  // namespace

TEST_CASE("logprobs: log-softmax of the CPU backend's logits to 1e-5, top-k in order, in both formats") {
  const LoadedModel* model = loaded_default_model(WeightForm::kPackedWhereQuantized);
  if (model == nullptr) {
    MESSAGE("skipped: the default model is not installed (scripts/fetch-model.sh)");
    return;
  }
  const fs::path dir = scratch_dir("logprobs");
  write_file(
      dir / "plain.jsonl",
      fmt::format(
          R"({{"id": "c", "prompt": "{}", "max_tokens": 12, "temperature": 0, "logprobs": 5}})"
          "\n"
          R"({{"id": "m", "messages": {}, "max_tokens": 12, "temperature": 0.9, "seed": 4, "n": 2, "logprobs": 3}})"
          "\n",
          kColorsPrompt, kMessages));
  write_file(
      dir / "openai.jsonl",
      fmt::format(R"({{"custom_id": "c", "method": "POST", "url": "/v1/completions", "body": {{"prompt": "{}", )"
                  R"("max_tokens": 12, "temperature": 0, "logprobs": 5}}}})"
                  "\n"
                  R"({{"custom_id": "m", "method": "POST", "url": "/v1/chat/completions", "body": {{"messages": {}, )"
                  R"("max_tokens": 12, "temperature": 0.9, "seed": 4, "n": 2, "logprobs": true, "top_logprobs": 3}}}})"
                  "\n",
                  kColorsPrompt, kMessages));
  for (const char* name : {"plain", "openai"}) {
    const CliResult r =
        run_pagedgen(fmt::format("generate -q -i {} -o {}", sh_quote(dir / fmt::format("{}.jsonl", name)),
                                 sh_quote(dir / fmt::format("{}.out.jsonl", name))),
                     dir / "stderr.txt");
    INFO(r.stderr_text);
    REQUIRE(r.exit_code == 0);
  }
  const std::vector<std::string> plain_lines = complete_lines(read_file(dir / "plain.out.jsonl"));
  const std::vector<std::string> openai_lines = complete_lines(read_file(dir / "openai.out.jsonl"));
  REQUIRE(plain_lines.size() == 2);
  REQUIRE(openai_lines.size() == 2);
  MESSAGE("plain line: " << plain_lines[0].substr(0, 400));

  // The prompts as the CLI builds them.
  const Tokenizer& tokenizer = model->files.tokenizer();
  const PromptBuilder builder(tokenizer, test::model_chat_template(*model->files.chat_template_text(), tokenizer), "",
                              model->files.config().context_length);
  const auto prompt_ids = [&](const std::string& line) {
    RequestParser parser(RequestFormat::kPlain, SamplingParams{});
    const auto built = builder.build(std::get<Request>(parser.parse(line, 0)));
    return std::get<PreparedRequest>(built).prompt_ids;
  };
  const std::vector<std::string> inputs = complete_lines(read_file(dir / "plain.jsonl"));

  simdjson::dom::parser plain_parser, openai_parser;
  // The completion: plain values against the logits, the OpenAI line's the same.
  const simdjson::dom::element c = plain_parser.parse(plain_lines[0]).value();
  const std::vector<Entry> completion = plain_entries(c);
  REQUIRE(completion.size() == static_cast<std::size_t>(c["usage"]["completion_tokens"].get_int64().value()));
  std::vector<TokenId> generated;
  for (const Entry& e : completion) generated.push_back(e.id);
  check_against_logits(completion, teacher_forced_logits(*model, prompt_ids(inputs[0]), generated), 5, tokenizer);
  for (const Entry& e : completion) CHECK(e.id == e.top[0].first);  // greedy picks the most likely
  {
    const simdjson::dom::element o = openai_parser.parse(openai_lines[0]).value();
    const simdjson::dom::element lp = o["response"]["body"]["choices"].at(0)["logprobs"];
    std::size_t i = 0;
    for (simdjson::dom::element token : array_of(lp["tokens"]))
      CHECK(token.get_string().value() == completion[i++].token);
    CHECK(i == completion.size());
    i = 0;
    for (simdjson::dom::element value : array_of(lp["token_logprobs"]))
      CHECK(value.get_double().value() == completion[i++].logprob);
    i = 0;
    for (simdjson::dom::element top : array_of(lp["top_logprobs"])) {
      std::size_t j = 0;
      for (auto [key, value] : object_of(top)) {
        // The keys are the top tokens' texts (a repeated text appears once).
        const auto at = std::find(completion[i].top_tokens.begin(), completion[i].top_tokens.end(), std::string(key));
        REQUIRE(at != completion[i].top_tokens.end());
        CHECK(value.get_double().value() ==
              completion[i].top[static_cast<std::size_t>(at - completion[i].top_tokens.begin())].second);
        ++j;
      }
      CHECK(j >= 1);
      CHECK(j <= 5);
      ++i;
    }
    int64_t previous = -1;
    for (simdjson::dom::element offset : array_of(lp["text_offset"])) {
      CHECK(offset.get_int64().value() >= previous);
      previous = offset.get_int64().value();
    }
  }

  // The chat request's two samples: each against its own teacher-forced logits; the OpenAI
  // chat line carries the same tokens, values and bytes.
  const simdjson::dom::element m = plain_parser.parse(plain_lines[1]).value();
  const simdjson::dom::element o = openai_parser.parse(openai_lines[1]).value();
  const std::vector<TokenId> chat_prompt = prompt_ids(inputs[1]);
  for (std::size_t s = 0; s < 2; ++s) {
    CAPTURE(s);
    const std::vector<Entry> entries = plain_entries(m["choices"].at(s));
    std::vector<TokenId> ids;
    for (const Entry& e : entries) ids.push_back(e.id);
    check_against_logits(entries, teacher_forced_logits(*model, chat_prompt, ids), 3, tokenizer);
    std::size_t i = 0;
    for (simdjson::dom::element content : array_of(o["response"]["body"]["choices"].at(s)["logprobs"]["content"])) {
      REQUIRE(i < entries.size());
      CHECK(content["token"].get_string().value() == entries[i].token);
      CHECK(content["logprob"].get_double().value() == entries[i].logprob);
      std::string bytes;
      for (simdjson::dom::element b : array_of(content["bytes"])) bytes += static_cast<char>(b.get_int64().value());
      CHECK(bytes == tokenizer.token_bytes(entries[i].id, true));
      std::size_t j = 0;
      for (simdjson::dom::element top : array_of(content["top_logprobs"])) {
        CHECK(top["logprob"].get_double().value() == entries[i].top[j].second);
        CHECK(top["token"].get_string().value() == entries[i].top_tokens[j]);
        ++j;
      }
      CHECK(j == 3);
      ++i;
    }
    CHECK(i == entries.size());
  }
  fs::remove_all(dir);
}

TEST_CASE("penalties change a greedy output and keep it the same at every block size and with sharing off") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const fs::path dir = scratch_dir("penalties");
  constexpr const char* kRepeating = "one two three one two three one two three one two three";
  const auto line = [&](const std::string& id, const std::string& fields) {
    return fmt::format(R"({{"id": "{}", "prompt": "{}", "max_tokens": 24, "temperature": 0, "logprobs": 0{}}})", id,
                       kRepeating, fields);
  };
  // First the plain greedy run, for the token it starts with.
  write_file(dir / "base.jsonl", line("base", "") + "\n");
  REQUIRE(run_pagedgen(fmt::format("generate -q -i {} -o {}", sh_quote(dir / "base.jsonl"), sh_quote(dir / "base.out")),
                       dir / "stderr.txt")
              .exit_code == 0);
  simdjson::dom::parser parser;
  const std::string base_line = complete_lines(read_file(dir / "base.out")).at(0);
  const simdjson::dom::element base = parser.parse(base_line).value();
  const std::string base_text(base["text"].get_string().value());
  const int64_t first = base["logprobs"].at(0)["id"].get_int64().value();
  MESSAGE("greedy: " << base_text);

  write_file(
      dir / "in.jsonl",
      line("base", "") + "\n" + line("freq", R"(, "frequency_penalty": 1.5, "presence_penalty": 0.5)") + "\n" +
          line("rep", R"(, "repetition_penalty": 1.5)") + "\n" +
          line("ban", fmt::format(R"(, "logit_bias": {{"{}": -100}})", first)) + "\n" +
          fmt::format(R"({{"id": "forks", "prompt": "{}", "max_tokens": 16, "temperature": 0.9, "seed": 1, "n": 3, )"
                      R"("frequency_penalty": 1.0}})",
                      kRepeating) +
          "\n");
  std::vector<std::string> outputs;
  for (const char* flags : {"--block-size 8", "--block-size 32", "--block-size 16 --no-prefix-sharing"}) {
    const fs::path out = dir / fmt::format("out{}.jsonl", outputs.size());
    const CliResult r =
        run_pagedgen(fmt::format("generate -q -i {} -o {} {}", sh_quote(dir / "in.jsonl"), sh_quote(out), flags),
                     dir / "stderr.txt");
    INFO(r.stderr_text);
    REQUIRE(r.exit_code == 0);
    // cached_tokens is the one figure that depends on the block size and on sharing.
    outputs.push_back(
        std::regex_replace(read_file(out), std::regex(R"("cached_tokens":[0-9]+)"), "\"cached_tokens\":0"));
  }
  CHECK(outputs[1] == outputs[0]);
  CHECK(outputs[2] == outputs[0]);
  const std::vector<std::string> lines = complete_lines(outputs[0]);
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == std::regex_replace(base_line, std::regex(R"("cached_tokens":[0-9]+)"), "\"cached_tokens\":0"));
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < 4; ++i) {
    simdjson::dom::parser p;
    texts.emplace_back(p.parse(lines[i]).value()["text"].get_string().value());
    MESSAGE(texts.back());
  }
  CHECK(texts[1] != texts[0]);
  CHECK(texts[2] != texts[0]);
  CHECK(texts[3] != texts[0]);
  simdjson::dom::parser p;
  CHECK(p.parse(lines[3]).value()["logprobs"].at(0)["id"].get_int64().value() != first);
  fs::remove_all(dir);
}
