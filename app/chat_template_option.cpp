#include "chat_template_option.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

#include "io/chat_template_kwargs.h"
#include "loader/model_vocabulary.h"
#include "tokenizer/builtin_chat_templates.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/fnv_hash.h"

namespace pagedgen::app {

namespace {

std::string read_template_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    fail("--chat-template '{}' is neither a built-in template ({}) nor a readable file", path,
         fmt::join(builtin_chat_template_names(), ", "));
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// The Jinja text --chat-template names.
std::string template_text(const std::string& chat_template) {
  if (const std::optional<std::string_view> builtin = builtin_chat_template(chat_template))
    return std::string(*builtin);
  return read_template_file(chat_template);
}

std::optional<std::chrono::year_month_day> parse_date(const std::string& text) {
  int year = 0;
  unsigned month = 0, day = 0;
  char extra = 0;
  if (text.size() != 10 || std::sscanf(text.c_str(), "%4d-%2u-%2u%c", &year, &month, &day, &extra) != 3)
    return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year(year), std::chrono::month(month), std::chrono::day(day)};
  return date.ok() ? std::optional(date) : std::nullopt;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  return fmt::format("{:04}-{:02}-{:02}", local.tm_year + 1900, local.tm_mon + 1, local.tm_mday);
}

std::string check_template_option(const std::string& chat_template) {
  try {
    (void)jinja::Template::parse(template_text(chat_template));
    return "";
  } catch (const jinja::TemplateError& error) {
    return fmt::format("'{}' does not parse: {}", chat_template, error.what());
  } catch (const Error& error) {
    return error.what();
  }
}

}  // namespace

void add_chat_template_options(CLI::App& command, ChatTemplateOptions& options) {
  command
      .add_option("--chat-template", options.chat_template,
                  fmt::format("Render `messages` with this Jinja file, or the built-in template of a family ({}), "
                              "instead of the model's own template",
                              fmt::join(builtin_chat_template_names(), ", ")))
      ->type_name("FILE|NAME")
      ->check(check_template_option);
  command
      .add_option("--chat-template-date", options.date,
                  "The date the chat template's strftime_now gives (default: today; --resume: the date the run "
                  "recorded); pin it so that shards and reruns render the same prompts")
      ->type_name("YYYY-MM-DD")
      ->check([](const std::string& text) -> std::string {
        return parse_date(text) ? "" : fmt::format("must be a date YYYY-MM-DD, got '{}'", text);
      });
  command
      .add_option("--chat-template-kwargs", options.kwargs,
                  "Extra chat-template variables for every line, a JSON object (e.g. '{\"enable_thinking\": false}'); "
                  "a line's chat_template_kwargs override it name by name")
      ->type_name("JSON")
      ->check([](const std::string& text) -> std::string {
        try {
          (void)parse_chat_template_kwargs(text);
          return "";
        } catch (const Error& error) {
          return error.what();
        }
      });
}

std::string chat_template_date(const ChatTemplateOptions& options, const std::optional<std::string>& recorded) {
  if (!options.date.empty()) return options.date;
  return recorded.value_or(today());
}

std::string chat_template_setting(const std::string& chat_template) {
  if (chat_template.empty()) return "auto";
  if (builtin_chat_template(chat_template)) return chat_template;
  const std::string text = read_template_file(chat_template);
  return fmt::format("file bytes={} fnv1a64={:016x}", text.size(), fnv1a_bytes(kFnvOffsetBasis, text));
}

ResolvedChatTemplate resolve_chat_template(const ModelVocabulary& vocabulary, const ChatTemplateOptions& options) {
  const std::optional<std::string>& model_text = vocabulary.chat_template_text();
  if (options.chat_template.empty() && !model_text)
    return {std::nullopt, fmt::format("the model has no chat template; run with --chat-template FILE or NAME (one of "
                                      "{})",
                                      fmt::join(builtin_chat_template_names(), ", "))};
  const Tokenizer& tokenizer = vocabulary.tokenizer();
  const SpecialTokens& special = tokenizer.special();
  const std::string date_text = chat_template_date(options, std::nullopt);
  const std::optional<std::chrono::year_month_day> date = parse_date(date_text);
  if (!date) fail("the chat template's date '{}' is not a date YYYY-MM-DD", date_text);
  const ChatTemplateKwargs kwargs =
      options.kwargs.empty() ? ChatTemplateKwargs{} : parse_chat_template_kwargs(options.kwargs);
  const std::string text = options.chat_template.empty() ? *model_text : template_text(options.chat_template);
  try {
    return {ChatTemplate(jinja::Template::parse(text), special.bos ? tokenizer.piece(*special.bos) : "",
                         special.eos ? tokenizer.piece(*special.eos) : "", *date, kwargs),
            ""};
  } catch (const jinja::TemplateError& error) {
    // Only the model's own text gets here: a --chat-template was parsed with the flags.
    return {std::nullopt, fmt::format("the model's chat template does not parse ({}); run with --chat-template "
                                      "FILE or NAME",
                                      error.what())};
  }
}

}  // namespace pagedgen::app
