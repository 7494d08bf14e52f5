// Fuzz target: the JSON Schema compiler of structured outputs. The input is a schema's
// text, given as a request's json_schema.schema is (io/json_schema_format.h). Checked: it
// either compiles or is refused with a typed error (UnsupportedSchemaError or Error, with
// a message; any other exception ends the run as a finding); a schema that compiles once
// compiles again from its compact text, and against a small vocabulary its token masks
// agree with trying every token, for a short walk (fuzz_grammar.h).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "fuzz_files.h"
#include "fuzz_grammar.h"
#include "grammar/grammar_error.h"
#include "grammar/json_grammar.h"
#include "io/json_schema_format.h"

using namespace pagedgen;

namespace {

[[noreturn]] void finding(const char* what, const char* message) {
  std::fprintf(stderr, "%s: %s\n", what, message);
  std::abort();
}

// The schema's format, or nullopt when it is refused with a typed error that says why.
std::optional<ResponseFormat> compile_or_refuse(std::string_view text) {
  try {
    return json_schema_format(text);
  } catch (const UnsupportedSchemaError& e) {
    if (*e.what() == '\0') finding("a schema refused as unsupported without a message", "");
  } catch (const Error& e) {
    if (*e.what() == '\0') finding("a schema refused as malformed without a message", "");
  }
  return std::nullopt;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  const std::optional<ResponseFormat> format = compile_or_refuse(text);
  if (!format) return 0;
  std::optional<Grammar> grammar;
  try {
    grammar = json_schema_grammar(format->spec);
  } catch (const Error& e) {
    finding("a schema that compiled is refused from its compact text", e.what());
  }
  fuzz::check_walk(fuzz::compile_for_small_vocabulary(std::move(*grammar)), text, 24, 3);
  return 0;
}
