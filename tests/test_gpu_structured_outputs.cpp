// Structured outputs on the CUDA backend end to end: `generate --device cuda --dtype
// float32` with the grammar masks applied by the device sampler, on the gpu tests' model
// (gpu_test_model.h: dummy weights of the default model's shape unless it is installed). A
// plain file under --json-object, mixing rows: a boolean schema (greedy) and an enum
// (sampled, n = 2) that leave a few texts, --json-object lines (greedy and sampled), and a
// line freed of the flag. Every constrained text that stopped is a value of its format; a
// decode step mixes masked and unmasked rows; the file is the same at block sizes 8 and 32
// and with CUDA graphs and the overlap off. The same checks run on the CPU backend first
// (no GPU needed), so the expectations are known to hold there; whether the GPU file
// equals the CPU's is reported, not required (float32 logits differ by ~1e-4, so a near
// tie may go the other way). Skips the GPU part without a GPU.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "gpu_test_device.h"
#include "gpu_test_model.h"
#include "test_paths.h"

using namespace pagedgen;

namespace {

// One sample's answer: its line's id, its text and why it ended.
struct Answer {
  std::string id;
  std::string text;
  std::string finish_reason;
};

const char* const kInput =
    R"({"id": "bool", "prompt": "Is the sea blue?", "temperature": 0, "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false}}}}
{"id": "colour", "prompt": "Pick a colour:", "n": 2, "temperature": 0.9, "response_format": {"type": "json_schema", "json_schema": {"name": "colour", "schema": {"enum": ["red", "green", "blue"]}}}}
{"id": "object-greedy", "messages": [{"role": "user", "content": "Describe a cat as JSON."}], "temperature": 0}
{"id": "object-sampled", "prompt": "A record:", "temperature": 0.8, "n": 2}
{"id": "free", "prompt": "Once upon a time", "max_tokens": 8, "response_format": {"type": "text"}}
)";

std::string string_field(simdjson::dom::element object, const char* key) {
  const std::string_view value = object[key];
  return std::string(value);
}

std::vector<Answer> answers_of(const std::string& output) {
  std::vector<Answer> answers;
  simdjson::dom::parser parser;
  for (const std::string& line : test::complete_lines(output)) {
    const simdjson::dom::element record = parser.parse(line);
    const std::string id = string_field(record, "id");
    const auto add = [&](simdjson::dom::element choice) {
      answers.push_back({id, string_field(choice, "text"), string_field(choice, "finish_reason")});
    };
    simdjson::dom::array choices;
    if (record["choices"].get(choices) == simdjson::SUCCESS) {
      for (simdjson::dom::element choice : choices) add(choice);
    } else {
      add(record);
    }
  }
  return answers;
}

bool parses_as_object(const std::string& text) {
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  return parser.parse(text).get(object) == simdjson::SUCCESS;
}

// The run's output file, after checking every answer against its format.
std::string run_and_check(const std::string& device_flags, const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "pagedgen-gpu-structured-outputs";
  std::filesystem::create_directories(dir);
  const std::filesystem::path input = dir / "in.jsonl";
  std::ofstream(input) << kInput;
  const std::filesystem::path out = dir / (name + ".jsonl");
  const test::CliResult r = test::run_pagedgen(
      fmt::format("generate -q {} {} --kv-cache-memory 1GiB --no-prefix-sharing --json-object -i '{}' -o '{}' "
                  "--max-tokens 40 --seed 7",
                  device_flags, test::gpu_test_model_args(), input.string(), out.string()),
      dir / "stderr.txt", "/dev/null", true);
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  const std::string output = test::read_file(out);
  const std::vector<Answer> answers = answers_of(output);
  REQUIRE(answers.size() == 7);
  const std::set<std::string> booleans = {R"({"ok":true})", R"({"ok":false})"};
  const std::set<std::string> colours = {R"("red")", R"("green")", R"("blue")"};
  int num_objects = 0;
  for (const Answer& a : answers) {
    CAPTURE(a.id);
    CAPTURE(a.text);
    CAPTURE(a.finish_reason);
    if (a.id == "bool") {
      CHECK(booleans.contains(a.text));
      CHECK(a.finish_reason == "stop");
    } else if (a.id == "colour") {
      CHECK(colours.contains(a.text));
      CHECK(a.finish_reason == "stop");
    } else if (a.id == "free") {
      CHECK(a.finish_reason == "length");
    } else {
      // Cut by max_tokens, it is a prefix of an object; stopped, it is one.
      CHECK(a.text.starts_with("{"));
      if (a.finish_reason == "stop") {
        CHECK(parses_as_object(a.text));
        ++num_objects;
      } else {
        CHECK(a.finish_reason == "length");
      }
    }
  }
  MESSAGE(name << ": " << num_objects << " of 3 --json-object samples stopped as a whole object");
  return output;
}

}  // namespace

TEST_CASE("generate --json-object and schemas on the CPU backend: the expectations the GPU run is held to") {
  run_and_check("--device cpu --cpu-math exact", "cpu");
}

TEST_CASE("generate --device cuda --dtype float32: masked outputs valid, the same at block sizes and without graphs") {
  REQUIRE_GPU();
  MESSAGE("model: " << test::gpu_test_model_args());
  const std::string cpu = run_and_check("--device cpu --cpu-math exact", "cpu");
  const std::string gpu = run_and_check("--device cuda --dtype float32 --block-size 16", "cuda-bs16");
  CHECK(run_and_check("--device cuda --dtype float32 --block-size 8", "cuda-bs8") == gpu);
  CHECK(run_and_check("--device cuda --dtype float32 --block-size 32", "cuda-bs32") == gpu);
  CHECK(run_and_check("--device cuda --dtype float32 --block-size 16 --no-cuda-graphs --no-overlap", "cuda-eager") ==
        gpu);
  MESSAGE("GPU float32 output file " << (gpu == cpu ? "identical to" : "differs from") << " the CPU backend's");
}
