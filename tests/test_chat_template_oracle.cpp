// The oracle test of chat templates: every real template in tests/data/chat_templates over a
// set of request lines (render_expected.py's), rendered by Python's jinja2 set up as
// transformers sets it up, and by pagedgen (the line read as generate reads it, then the
// template through core/jinja), compared byte for byte. Where jinja2 raises, pagedgen must
// give the line an error. The script runs at test time: without python3-jinja2 the test
// fails (scripts/install-deps.sh installs it).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "io/request_parser.h"
#include "test_paths.h"
#include "tokenizer/chat_template.h"
#include "util/error.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

// The script's standard output; fails the test when it does not run to success.
std::string run_oracle_script() {
  const std::string command =
      fmt::format("python3 '{}' 2>&1", (data_dir() / "chat_templates" / "render_expected.py").string());
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  REQUIRE(pipe);
  std::string out;
  char buffer[1 << 16];
  while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe.get())) out.append(buffer, n);
  const int status = pclose(pipe.release());
  REQUIRE_MESSAGE(status == 0, "render_expected.py failed (python3-jinja2 missing? run scripts/install-deps.sh): ",
                  out.substr(0, 2000));
  return out;
}

std::chrono::year_month_day parse_date(std::string_view text) {
  int year = 0;
  unsigned month = 0, day = 0;
  REQUIRE(std::sscanf(std::string(text).c_str(), "%d-%u-%u", &year, &month, &day) == 3);
  return std::chrono::year(year) / month / day;
}

// pagedgen's prompt for a case, or why it gave an error: (ok, text).
std::pair<bool, std::string> pagedgen_render(const std::string& template_text, simdjson::dom::element c,
                                             std::chrono::year_month_day date) {
  try {
    const ChatTemplate chat(jinja::Template::parse(template_text), std::string(std::string_view(c["bos_token"])),
                            std::string(std::string_view(c["eos_token"])), date);
    RequestParser parser(RequestFormat::kPlain, SamplingParams{});
    const RequestItem item = parser.parse(simdjson::minify(c["request"]), 0);
    if (const auto* error = std::get_if<RequestError>(&item)) return {false, error->code + ": " + error->message};
    return {true, chat.render(std::get<Request>(item).chat())};
  } catch (const Error& error) {  // jinja::TemplateError included
    return {false, error.what()};
  }
}

// Where two texts first differ, with a little of each around it.
std::string first_difference(const std::string& expected, const std::string& got) {
  std::size_t at = 0;
  while (at < expected.size() && at < got.size() && expected[at] == got[at]) ++at;
  const std::size_t from = at > 40 ? at - 40 : 0;
  return fmt::format("byte {}: expected ...{:?}..., got ...{:?}...", at, expected.substr(from, 100),
                     got.substr(from, 100));
}

}  // namespace

TEST_CASE("real chat templates render as transformers' jinja2 renders them, byte for byte") {
  const std::string json = run_oracle_script();
  simdjson::dom::parser parser;
  const simdjson::dom::element root = parser.parse(json).value();
  const std::chrono::year_month_day date = parse_date(std::string_view(root["date"]));
  std::vector<std::string> mismatches;
  std::size_t num_cases = 0, num_errors = 0;
  std::string template_name, template_text;
  for (simdjson::dom::element c : simdjson::dom::array(root["cases"])) {
    ++num_cases;
    const std::string name{std::string_view(c["name"])};
    if (std::string(std::string_view(c["template"])) != template_name) {
      template_name = std::string_view(c["template"]);
      template_text = read_file(data_dir() / "chat_templates" / template_name);
    }
    const auto [ok, text] = pagedgen_render(template_text, c, date);
    std::string_view expected;
    if (c["expected"].get(expected) == simdjson::SUCCESS) {
      if (!ok)
        mismatches.push_back(fmt::format("{}: jinja2 renders, pagedgen fails: {}", name, text));
      else if (text != expected)
        mismatches.push_back(fmt::format("{}: {}", name, first_difference(std::string(expected), text)));
    } else {
      ++num_errors;
      if (ok)
        mismatches.push_back(fmt::format("{}: jinja2 raises ({}), pagedgen renders {:?}", name,
                                         std::string_view(c["error"]), text.substr(0, 200)));
    }
  }
  MESSAGE(num_cases << " cases (" << num_errors << " where jinja2 raises), " << mismatches.size() << " differ");
  for (std::size_t i = 0; i < mismatches.size() && i < 40; ++i) MESSAGE(mismatches[i]);
  CHECK(num_cases >= 600);  // 28 templates x 24 requests: the script cannot pass by printing nothing
  CHECK(mismatches.empty());
}
