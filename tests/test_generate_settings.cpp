// The resume manifest against `generate`'s real flags (app/generate_settings.h): every flag
// is either a manifest setting or listed as changing no byte, and each setting's value
// moves when its flag is given.
#include <CLI/CLI.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "generate_settings.h"

using namespace pagedgen::app;

namespace {

// The name the tables use for an option: its first long name, else its first short one.
std::string flag_name(const CLI::Option& option) {
  if (!option.get_lnames().empty()) return "--" + option.get_lnames().front();
  return "-" + option.get_snames().front();
}

std::vector<std::string> generate_flags() {
  CLI::App app;
  GenerateOptions options;
  CLI::App* generate = add_generate_flags(app, options);
  std::vector<std::string> flags;
  for (const CLI::Option* option : generate->get_options())
    if (option != generate->get_help_ptr() && option != generate->get_help_all_ptr())
      flags.push_back(flag_name(*option));
  return flags;
}

// How many times the two tables name `flag`.
int times_named(const std::string& flag) {
  int count = 0;
  for (const ManifestSetting& row : manifest_table()) count += static_cast<int>(std::ranges::count(row.flags, flag));
  for (const UnrecordedFlag& unrecorded : unrecorded_flags()) count += unrecorded.flag == flag ? 1 : 0;
  return count;
}

// `generate -i in.jsonl -o out.jsonl` plus `extra`, parsed as the command line would be.
GenerateOptions parse_generate(std::vector<std::string> extra) {
  CLI::App app;
  GenerateOptions options;
  add_generate_flags(app, options);
  std::vector<std::string> args = {"pagedgen", "generate", "-i", "in.jsonl", "-o", "out.jsonl"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return options;
}

std::filesystem::path write_temp_file(const std::string& name, const std::string& text) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("every flag of generate is a manifest setting or is listed as changing no byte, once") {
  const std::vector<std::string> flags = generate_flags();
  CHECK(flags.size() >= 40);
  for (const std::string& flag : flags) {
    CAPTURE(flag);
    CHECK(times_named(flag) == 1);
  }
  // And the tables name no flag that generate lacks (a renamed flag).
  for (const ManifestSetting& row : manifest_table())
    for (std::string_view flag : row.flags) {
      CAPTURE(flag);
      CHECK(std::ranges::count(flags, std::string(flag)) == 1);
    }
  for (const UnrecordedFlag& unrecorded : unrecorded_flags()) {
    CAPTURE(unrecorded.flag);
    CHECK(std::ranges::count(flags, std::string(unrecorded.flag)) == 1);
    CHECK(!unrecorded.why.empty());
  }
}

TEST_CASE("each manifest setting's value changes when one of its flags moves off its default") {
  const std::filesystem::path model = write_temp_file("pagedgen-settings-model.gguf", "model bytes");
  const std::filesystem::path other_model = write_temp_file("pagedgen-settings-other.gguf", "other model bytes");
  // A value away from the default for each flag of the table ("" for a switch).
  const std::map<std::string, std::string> moved = {
      {"--format", "openai"},
      {"--chat-template", "chatml"},
      {"--chat-template-date", "2025-01-02"},
      {"--chat-template-kwargs", R"({"enable_thinking":false})"},
      {"--seed", "7"},
      {"--temperature", "0.5"},
      {"--top-p", "0.5"},
      {"--top-k", "5"},
      {"--min-p", "0.25"},
      {"--max-tokens", "7"},
      {"--min-tokens", "2"},
      {"--stop", "END"},
      {"--ignore-eos", ""},
      {"-n", "3"},
      {"--max-model-len", "100"},
      {"--block-size", "8"},
      {"--num-blocks", "10"},
      {"--kv-cache-memory", "2GiB"},
      {"--max-num-seqs", "8"},
      {"--max-batch-tokens", "64"},
      {"--no-prefix-sharing", ""},
      {"--plan-window", "5"},
      {"--device", "cpu"},
      {"--dtype", "float16"},
      {"--cpu-math", "exact"},
      {"--kv-cache-dtype", "float32"},
      {"--load-format", "dummy"},
      {"--shard", "1/2"},
      {"--json-schema", write_temp_file("pagedgen-settings-schema.json", R"({"type": "object"})").string()},
      {"--json-object", ""},
      {"--regex", "[a-z]+"},
      {"--choice", "yes"},
      {"--grammar", write_temp_file("pagedgen-settings-grammar.gbnf", R"(root ::= "a"+)").string()},
      {"--tokenizer", other_model.string() + " --load-format dummy"},
      {"--gpu-memory-utilization", "0.5"}};
  const GenerateOptions defaults = parse_generate({});
  for (const ManifestSetting& row : manifest_table()) {
    CAPTURE(row.key);
    const std::optional<std::string> before = row.value(defaults, model);
    if (row.key == "model") {
      CHECK(row.value(defaults, other_model) != before);
      continue;
    }
    for (std::string_view flag : row.flags) {
      CAPTURE(flag);
      const auto example = moved.find(std::string(flag));
      REQUIRE_MESSAGE(example != moved.end(), "give the test a value away from this flag's default");
      std::vector<std::string> args = {example->first};
      std::istringstream words(example->second);  // a value, and the flags it needs
      for (std::string word; words >> word;) args.push_back(word);
      CHECK(row.value(parse_generate(args), model) != before);
    }
  }
}

TEST_CASE("the manifest of a default run: the settings older manifests hold, in their order") {
  const std::filesystem::path model = write_temp_file("pagedgen-settings-model.gguf", "model bytes");
  std::vector<std::string> keys;
  for (const auto& [key, value] : manifest_settings(parse_generate({}), model)) keys.push_back(key);
  const std::vector<std::string> expected = {"model",
                                             "format",
                                             "chat_template",
                                             "seed",
                                             "temperature",
                                             "top_p",
                                             "top_k",
                                             "min_p",
                                             "max_tokens",
                                             "min_tokens",
                                             "stop",
                                             "ignore_eos",
                                             "n",
                                             "max_model_len",
                                             "block_size",
                                             "num_blocks",
                                             "kv_cache_memory",
                                             "max_num_seqs",
                                             "max_batch_tokens",
                                             "prefix_sharing",
                                             "plan_window",
                                             "device",
                                             "dtype",
                                             "cpu_math",
                                             "kv_cache_dtype",
                                             "load_format",
                                             "shard"};
  CHECK(keys == expected);
  const auto settings = manifest_settings(parse_generate({"--no-prefix-sharing", "--stop", "a\"b"}), model);
  CHECK(settings[10].second == R"(["a\"b"])");
  CHECK(settings[19].second == "false");
}
