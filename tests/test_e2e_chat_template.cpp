// The chat template on the command line (issue 30): `pagedgen render` shows each line's
// prompt (the model's own template, a --chat-template FILE, its date and kwargs, tools,
// continue_final_message) or its error record; a FILE that does not parse exits 2 naming its
// line; a model template that does not parse fails chat lines only; generate records the date
// in its manifest, --resume reuses it, and merge refuses shards rendered on different dates.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "io/manifest.h"
#include "test_paths.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

// A template that shows what it is given: the date, each message, tools, the generation
// prompt and enable_thinking; a "boss" message makes it raise.
constexpr const char* kTemplate = R"({{ bos_token }}Today {{ strftime_now("%d %b %Y") }}.
{% for m in messages %}
{% if m.role == "boss" %}{{ raise_exception("no bosses here") }}{% endif %}
<{{ m.role }}>{{ m.content }}</{{ m.role }}>
{% endfor %}
{% if tools %}TOOLS {{ tools | tojson }}
{% endif %}
{% if add_generation_prompt %}<assistant>{% if enable_thinking is defined and not enable_thinking %}<think></think>{% endif %}{% endif %}
)";

constexpr const char* kLines =
    R"({"id": "a", "messages": [{"role": "user", "content": "Hi"}]}
{"id": "b", "messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": {"enable_thinking": true}}
{"id": "c", "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Sure: "}], "continue_final_message": true}
{"id": "d", "messages": [{"role": "user", "content": "Weather?"}], "tools": [{"type": "function", "function": {"name": "get_weather"}}]}
{"id": "e", "prompt": "plain text"}
{"id": "f", "messages": [{"role": "boss", "content": "x"}]}
{"id": "g", "messages": [{"role": "user", "content": "Hi"}], "continue_final_message": true, "add_generation_prompt": true}
)";

struct Files {
  TempDir dir{"pagedgen-chat-template"};
  std::filesystem::path model = *default_model();
  std::filesystem::path template_file = dir / "t.jinja";
  std::filesystem::path input = dir / "in.jsonl";
  Files() {
    write_file(template_file, kTemplate);
    write_file(input, kLines);
  }
  // `pagedgen ARGS`, its stdout's lines in `lines`.
  CliResult run(const std::string& args, std::vector<std::string>* lines = nullptr) const {
    const CliResult result = run_pagedgen(args, dir / "stderr.txt", dir / "stdout.txt");
    if (lines) *lines = complete_lines(read_file(dir / "stdout.txt"));
    return result;
  }
  std::string render_args(const std::string& flags) const {
    return fmt::format("render -m {} -i {} {}", sh_quote(model), sh_quote(input), flags);
  }
};

}  // namespace

TEST_CASE("render: --chat-template FILE with its date, kwargs, tools, continue_final_message and per-line errors") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const Files files;
  std::vector<std::string> lines;
  const CliResult result = files.run(
      files.render_args(fmt::format("--chat-template {} --chat-template-date 2024-02-29 --chat-template-kwargs "
                                    "'{{\"enable_thinking\": false}}'",
                                    sh_quote(files.template_file))),
      &lines);
  CHECK(result.exit_code == 1);  // two lines failed
  REQUIRE(lines.size() == 7);
  // The default kwargs apply; the BOS text is the model's.
  CHECK(
      lines[0] ==
      R"({"id":"a","index":0,"prompt":"<|im_start|>Today 29 Feb 2024.\n<user>Hi</user>\n<assistant><think></think>"})");
  // A line's own kwargs override the default.
  CHECK(lines[1] == R"({"id":"b","index":1,"prompt":"<|im_start|>Today 29 Feb 2024.\n<user>Hi</user>\n<assistant>"})");
  // continue_final_message: no generation prompt, cut after the final message's text.
  CHECK(lines[2] ==
        R"({"id":"c","index":2,"prompt":"<|im_start|>Today 29 Feb 2024.\n<user>Hi</user>\n<assistant>Sure: "})");
  // Tools reach the template as given, key order kept (transformers' tojson).
  CHECK(lines[3] == R"({"id":"d","index":3,"prompt":"<|im_start|>Today 29 Feb 2024.\n<user>Weather?</user>\n)"
                    R"(TOOLS [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}]\n)"
                    R"(<assistant><think></think>"})");
  CHECK(lines[4] == R"({"id":"e","index":4,"prompt":"plain text"})");
  CHECK(lines[5] == R"({"id":"f","index":5,"error":{"code":"chat_template_error","message":"the chat template )"
                    R"(failed: line 3: no bosses here"}})");
  CHECK(lines[6].starts_with(R"({"id":"g","index":6,"error":{"code":"conflicting_fields")"));

  // --ids: the token ids generate decodes (the prompt line with the model's add_bos: none).
  REQUIRE(files.run(files.render_args("--ids"), &lines).exit_code == 1);
  CHECK(lines[4].starts_with(R"({"id":"e","index":4,"prompt":[)"));
  CHECK(lines[0].starts_with(R"({"id":"a","index":0,"prompt":[1,)"));  // <|im_start|> is id 1
}

TEST_CASE("render: the model's own template by default, and a built-in one by name") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const Files files;
  std::vector<std::string> lines;
  files.run(files.render_args(""), &lines);
  REQUIRE(lines.size() == 7);
  // SmolLM2's template adds its default system message.
  CHECK(lines[0] == R"({"id":"a","index":0,"prompt":"<|im_start|>system\nYou are a helpful AI assistant named )"
                    R"(SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n)"
                    R"(<|im_start|>assistant\n"})");
  files.run(files.render_args("--chat-template chatml"), &lines);
  REQUIRE(lines.size() == 7);
  CHECK(lines[0] == R"({"id":"a","index":0,"prompt":"<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"})");
}

TEST_CASE("render: a truncate_prompt_tokens line shows the kept tokens, as text and as ids") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const Files files;
  write_file(files.input, R"({"id": "t", "prompt": "one two three four", "truncate_prompt_tokens": 2})"
                          "\n");
  std::vector<std::string> lines;
  REQUIRE(files.run(files.render_args(""), &lines).exit_code == 0);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == R"({"id":"t","index":0,"prompt":" three four"})");
  REQUIRE(files.run(files.render_args("--ids"), &lines).exit_code == 0);
  REQUIRE(lines.size() == 1);
  CHECK(std::count(lines[0].begin(), lines[0].end(), ',') == 3);  // "id", "index" and two ids
}

TEST_CASE("a --chat-template FILE that does not parse exits 2 at startup, naming its line") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const Files files;
  write_file(files.dir / "bad.jinja", "fine\n{% for m in messages %}\n{{ m.content }}\n");
  const CliResult render = files.run(files.render_args("--chat-template " + sh_quote(files.dir / "bad.jinja")));
  CHECK(render.exit_code == 2);
  CHECK_MESSAGE(says(render, "does not parse: line "), render.stderr_text);
  const CliResult generate = files.run(
      fmt::format("generate -q -m {} -i {} -o {} --chat-template {}", sh_quote(files.model), sh_quote(files.input),
                  sh_quote(files.dir / "out.jsonl"), sh_quote(files.dir / "bad.jinja")));
  CHECK(generate.exit_code == 2);
  CHECK_FALSE(std::filesystem::exists(files.dir / "out.jsonl"));
  CHECK(files.run(files.render_args("--chat-template nosuchname")).exit_code == 2);
  CHECK(files.run(files.render_args("--chat-template-date 2024-02-30")).exit_code == 2);
  CHECK(files.run(files.render_args("--chat-template-kwargs '{\"messages\": 1}'")).exit_code == 2);
}

TEST_CASE("a model template that does not parse fails every chat line; prompt lines still run") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const Files files;
  // The default model with its template's first tag left unclosed (same length).
  std::string bytes = read_file(files.model);
  const std::string tag = "{% for message in messages %}";
  const std::size_t at = bytes.find(tag);
  REQUIRE(at != std::string::npos);
  bytes.replace(at, tag.size(), "{% for message in messages }}");
  const std::filesystem::path broken = files.dir / "broken.gguf";
  write_file(broken, bytes);
  std::vector<std::string> lines;
  const CliResult result =
      files.run(fmt::format("render -m {} -i {}", sh_quote(broken), sh_quote(files.input)), &lines);
  CHECK(result.exit_code == 1);
  REQUIRE(lines.size() == 7);
  CHECK(lines[0].starts_with(R"({"id":"a","index":0,"error":{"code":"chat_template_unavailable","message":"the )"
                             R"(model's chat template does not parse (line 1: )"));
  CHECK(lines[4] == R"({"id":"e","index":4,"prompt":"plain text"})");
}

TEST_CASE("generate records the template's date; --resume reuses it; merge refuses shards of different dates") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const Files files;
  write_file(files.input,
             "{\"id\": 1, \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}\n"
             "{\"id\": 2, \"prompt\": \"Once upon a time\"}\n");
  const std::filesystem::path out = files.dir / "out.jsonl";
  const std::string generate = fmt::format("generate -q -m {} -i {} --max-tokens 2 --chat-template {}",
                                           sh_quote(files.model), sh_quote(files.input), sh_quote(files.template_file));
  REQUIRE(files.run(fmt::format("{} -o {}", generate, sh_quote(out))).exit_code == 0);
  std::optional<Manifest> manifest = read_manifest(manifest_path(out));
  REQUIRE(manifest);
  const std::optional<std::string> today = manifest->setting("chat_template_date");
  REQUIRE(today);
  CHECK(today->size() == 10);

  // --resume renders with the recorded date, whatever today is: an output recorded as of
  // 2020-01-01 resumes without a date given, and is refused with another one pinned.
  for (auto& [name, value] : manifest->settings)
    if (name == "chat_template_date") value = "2020-01-01";
  write_manifest(manifest_path(out), *manifest);
  const CliResult resumed = files.run(fmt::format("{} -o {} --resume", generate, sh_quote(out)));
  CHECK_MESSAGE(resumed.exit_code == 0, resumed.stderr_text);
  const CliResult pinned =
      files.run(fmt::format("{} -o {} --resume --chat-template-date 2021-01-01", generate, sh_quote(out)));
  CHECK(pinned.exit_code == 3);
  CHECK_MESSAGE(says(pinned, "chat_template_date was 2020-01-01, now 2021-01-01"), pinned.stderr_text);

  // Shards rendered on different dates are two jobs.
  const auto shard = [&](const std::string& name, const std::string& k, const std::string& date) {
    return files.run(
        fmt::format("{} -o {} --shard {}/2 --chat-template-date {}", generate, sh_quote(files.dir / name), k, date));
  };
  REQUIRE(shard("s0.jsonl", "0", "2024-01-01").exit_code == 0);
  REQUIRE(shard("s1.jsonl", "1", "2024-01-02").exit_code == 0);
  const CliResult merged = files.run(fmt::format("merge -q -o {} {} {}", sh_quote(files.dir / "merged.jsonl"),
                                                 sh_quote(files.dir / "s0.jsonl"), sh_quote(files.dir / "s1.jsonl")));
  CHECK(merged.exit_code == 3);
  CHECK_MESSAGE(says(merged, "chat_template_date was 2024-01-01, now 2024-01-02"), merged.stderr_text);
}
