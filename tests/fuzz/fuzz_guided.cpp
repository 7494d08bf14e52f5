// Fuzz target: the guided front ends of structured outputs (regex, choice, GBNF). The input's
// first byte picks one ('r' a regex, 'c' choices one per line, anything else a GBNF
// grammar); the rest is its text. Checked: it either compiles or is refused with a typed
// error with a message (UnsupportedSchemaError, naming the cap for sizes past it, or Error;
// any other exception ends the run as a finding); against a small vocabulary its token
// masks agree with trying every token for a short walk (fuzz_grammar.h), and a walk that
// ends on the choices' grammar ends on one of the choices.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_files.h"
#include "fuzz_grammar.h"
#include "grammar/gbnf_grammar.h"
#include "grammar/grammar_error.h"
#include "grammar/regex_grammar.h"

using namespace pagedgen;

namespace {

[[noreturn]] void finding(const char* what, const char* message) {
  std::fprintf(stderr, "%s: %s\n", what, message);
  std::abort();
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// The grammar of the input, or nullopt when it is refused with a typed error that says why.
std::optional<Grammar> compile_or_refuse(char kind, std::string_view text, const std::vector<std::string>& choices) {
  try {
    if (kind == 'r') return regex_grammar(text);
    if (kind == 'c') return choice_grammar(choices);
    return gbnf_grammar(text);
  } catch (const UnsupportedSchemaError& e) {
    if (*e.what() == '\0') finding("refused as unsupported without a message", "");
  } catch (const Error& e) {
    if (*e.what() == '\0') finding("refused as malformed without a message", "");
  }
  return std::nullopt;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  if (input.empty()) return 0;
  const char kind = input.front();
  const std::string_view text = input.substr(1);
  const std::vector<std::string> choices = kind == 'c' ? lines_of(text) : std::vector<std::string>{};
  std::optional<Grammar> grammar = compile_or_refuse(kind, text, choices);
  if (!grammar) return 0;
  const std::optional<std::string> finished =
      fuzz::check_walk(fuzz::compile_for_small_vocabulary(std::move(*grammar)), text, 24, 3, fuzz::FinishedText::kAny);
  if (kind == 'c' && finished && std::find(choices.begin(), choices.end(), *finished) == choices.end())
    finding("a walk of the choices' grammar ended on a text that is not a choice", finished->c_str());
  return 0;
}
