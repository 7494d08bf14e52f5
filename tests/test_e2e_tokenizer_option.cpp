// `tokenize -m` and `--tokenizer` read only a GGUF's vocabulary, so a vocabulary-only file
// of an architecture pagedgen does not run (llama.cpp's starcoder2 vocabulary) works: exact
// ids from `tokenize`, and a dummy-weight `complete` and `generate` that tokenize with it.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "gguf_writer.h"
#include "test_paths.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

std::filesystem::path starcoder2_vocab() { return shared_dir() / "tokenizer-vectors" / "ggml-vocab-starcoder.gguf"; }

std::string config() { return sh_quote(source_dir() / "samples" / "smollm2-135m.config.json"); }

}  // namespace

TEST_CASE("tokenize and --tokenizer accept a vocabulary-only GGUF of an architecture pagedgen does not run") {
  if (!std::filesystem::exists(starcoder2_vocab())) {
    MESSAGE("skipped: ", starcoder2_vocab().string(), " is absent");
    return;
  }
  const TempDir dir("pagedgen-tokenizer-option");
  const std::string vocab = sh_quote(starcoder2_vocab());

  // Its general.architecture is 'starcoder2'; llama.cpp's vectors give these ids.
  const CliResult tokenized =
      run_pagedgen(fmt::format("tokenize -m {} ' Hello world'", vocab), dir / "err1", dir / "out1");
  CHECK(tokenized.exit_code == 0);
  CHECK(read_file(dir / "out1") == "12009 5810\n");

  // As a model it is refused: there are no weights and the architecture is not run.
  const CliResult as_model =
      run_pagedgen(fmt::format("complete --device cpu -m {} 'Hi' --max-tokens 1", vocab), dir / "err2");
  CHECK(as_model.exit_code != 0);
  CHECK(read_file(dir / "err2").find("starcoder2") != std::string::npos);

  // As --tokenizer of dummy weights it tokenizes prompts and decodes output.
  const CliResult complete = run_pagedgen(
      fmt::format("complete --device cpu --load-format dummy -m {} --tokenizer {} 'def f(x):' --max-tokens 2 "
                  "--ignore-eos",
                  config(), vocab),
      dir / "err3", dir / "out3");
  CHECK_MESSAGE(complete.exit_code == 0, complete.stderr_text);

  std::ofstream(dir / "in.jsonl") << "{\"prompt\": \"Hello world\", \"max_tokens\": 2, \"ignore_eos\": true}\n";
  const CliResult generate =
      run_pagedgen(fmt::format("generate -q --device cpu --load-format dummy -m {} --tokenizer {} -i {} -o {}",
                               config(), vocab, sh_quote(dir / "in.jsonl"), sh_quote(dir / "out.jsonl")),
                   dir / "err4");
  CHECK_MESSAGE(generate.exit_code == 0, generate.stderr_text);
  const std::string out = read_file(dir / "out.jsonl");
  CHECK(json_int(out, "usage", "prompt_tokens") == 2);  // "Hello world" is 8302 5810
  CHECK(json_int(out, "usage", "completion_tokens") == 2);
}
