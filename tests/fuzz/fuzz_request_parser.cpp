// Fuzz target: request files. The input is a JSONL file, read three ways: in the plain
// format, in the OpenAI batch format, and with the format detected (and a small line limit,
// so that over-long lines are reported too). Checked, as the job relies on: exactly one item
// per non-blank line, in order, each with its line's index; and (in the detected format)
// each item's output line (the request answered with its own text, or the error) is one
// valid JSON object that reads back as answering that line; and each distinct
// response_format a request carries compiles (the reader checked that it does) against a
// small vocabulary, with its token masks checked over a short walk (fuzz_grammar.h).
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_files.h"
#include "fuzz_grammar.h"
#include "sample/response_format.h"
#include "io/output_format.h"
#include "io/request_reader.h"
#include "util/error.h"

using namespace pagedgen;

namespace {

[[noreturn]] void finding(const char* what, uint64_t index) {
  std::fprintf(stderr, "%s (line %llu)\n", what, static_cast<unsigned long long>(index));
  std::abort();
}

// The 0-based numbers of the lines a RequestReader must answer: not blank (only spaces,
// tabs and CRs, after a byte-order mark on the first line).
std::vector<uint64_t> non_blank_lines(std::string_view input) {
  std::vector<uint64_t> numbers;
  uint64_t number = 0;
  while (!input.empty()) {
    const std::size_t end = std::min(input.find('\n'), input.size());
    std::string_view line = input.substr(0, end);
    if (number == 0 && line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) numbers.push_back(number);
    input.remove_prefix(std::min(end + 1, input.size()));
    ++number;
  }
  return numbers;
}

void check_output_line(RequestFormat format, const RequestItem& item, simdjson::dom::parser& parser) {
  OutputRecord record;
  RecordContext context;
  if (const auto* request = std::get_if<Request>(&item)) {
    RequestOutput output{request->index, request->id_json, {}, 3, 1};
    // Any text the line carries, as the output's text: the writer must quote whatever it is.
    const std::string text = request->is_chat()            ? request->chat().messages_json
                             : request->prompt_token_ids() ? std::string("\xE2\x82\xAC\n\"")
                                                           : request->prompt();
    for (int32_t i = 0; i < std::min(request->sampling.n, 3); ++i)
      output.choices.push_back({text, FinishReason::kStop, 2, {1, 2}, std::nullopt});
    context.chat = request->is_chat();
    context.model = request->model.value_or("m");
    record = std::move(output);
  } else {
    record = std::get<RequestError>(item);
  }
  const std::string line = format_output_line(format, record, context);
  const uint64_t index = item_index(item);
  if (line.find('\n') != std::string::npos) finding("an output line holds a newline", index);
  simdjson::dom::element root;
  if (parser.parse(line).get(root) != simdjson::SUCCESS || !root.is_object())
    finding("an output line is not a JSON object", index);
  const std::optional<OutputLineInfo> info = read_output_line(line);
  if (!info || info->index != index || info->is_error != std::holds_alternative<RequestError>(item))
    finding("an output line does not read back as answering its input line", index);
}

using CompiledFormats = std::set<std::pair<ResponseFormat::Type, std::string>>;

// The grammar of a response_format the reader accepted, compiled once per process (the
// json_object grammar and a mutated line's unchanged schema are met again and again), as
// the engine's GrammarCache keeps them; emptied when it holds 64.
std::shared_ptr<const CompiledGrammar> compiled_grammar(const ResponseFormat& format, uint64_t index) {
  static std::map<std::pair<ResponseFormat::Type, std::string>, std::shared_ptr<const CompiledGrammar>> cache;
  auto key = std::pair{format.type, format.spec};
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= 64) cache.clear();
  std::optional<Grammar> grammar;
  try {
    grammar = response_format_grammar(format);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    finding("a response_format the reader accepted does not compile", index);
  }
  return cache.emplace(std::move(key), fuzz::compile_for_small_vocabulary(std::move(*grammar))).first->second;
}

// Checks a request's constrained response_format once per read (`checked`): its grammar
// compiles, and a short walk over it (fuzz_grammar.h).
void check_response_format(const RequestItem& item, std::string_view input, CompiledFormats& checked) {
  const auto* request = std::get_if<Request>(&item);
  if (request == nullptr) return;
  const ResponseFormat& format = request->sampling.response_format;
  if (!format.is_constrained() || !checked.emplace(format.type, format.spec).second) return;
  const bool is_json =
      format.type == ResponseFormat::Type::kJsonObject || format.type == ResponseFormat::Type::kJsonSchema;
  fuzz::check_walk(compiled_grammar(format, request->index), input, 12, 3,
                   is_json ? fuzz::FinishedText::kJson : fuzz::FinishedText::kAny);
}

// What read_all checks of each item besides its line index.
struct ItemChecks {
  bool output_line = false;      // its output line (in the format the reader detected)
  bool response_format = false;  // its response_format compiles (check_response_format)
};

// Reads `input` to its end, checking every item's index and what `checks` asks.
void read_all(std::string_view input, const std::vector<uint64_t>& expected, std::optional<RequestFormat> format,
              std::size_t max_line_bytes, ItemChecks checks) {
  static simdjson::dom::parser parser;
  std::istringstream stream{std::string(input)};
  RequestReader reader(stream, SamplingParams{}, format, max_line_bytes);
  std::size_t count = 0;
  CompiledFormats compiled;
  while (std::optional<RequestItem> item = reader.next()) {
    const uint64_t index = item_index(*item);
    if (count >= expected.size() || expected[count] != index) finding("an item for no line or the wrong line", index);
    // Plain until a line says otherwise, as the job writes them (job/window_runner.cpp).
    if (checks.output_line) check_output_line(reader.format().value_or(RequestFormat::kPlain), *item, parser);
    if (checks.response_format) check_response_format(*item, input, compiled);
    ++count;
  }
  if (count != expected.size()) finding("a non-blank line got no item", count);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  const std::vector<uint64_t> expected = non_blank_lines(input);
  // Whole lines of either format compile their response_format; short lines check output.
  read_all(input, expected, RequestFormat::kPlain, LineReader::kDefaultMaxLineBytes, {.response_format = true});
  read_all(input, expected, RequestFormat::kOpenAiBatch, LineReader::kDefaultMaxLineBytes, {.response_format = true});
  read_all(input, expected, std::nullopt, 256, {.output_line = true});
  return 0;
}
