// Template::parse and render: the program (statement tree and globals) is built once and
// shared read-only by every render.
#include "jinja/template.h"

#include <fmt/format.h>

#include "jinja/interpreter.h"
#include "jinja/json_input.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"

namespace pagedgen::jinja {

TemplateError::TemplateError(int line, const std::string& message)
    : Error(fmt::format("line {}: {}", line, message)), line_(line) {}

struct Template::Program {
  Body body;
  std::shared_ptr<Scope> globals;
};

Template::Template(std::shared_ptr<const Program> program) : program_(std::move(program)) {}

Template Template::parse(std::string_view source) {
  auto program = std::make_shared<Program>();
  program->body = parse_template(tokenize(source));
  program->globals = std::make_shared<Scope>();
  add_globals(*program->globals);
  return Template(std::move(program));
}

std::string Template::render(std::string_view variables, std::chrono::year_month_day today,
                             const RenderLimits& limits) const {
  auto top = std::make_shared<Scope>();
  top->parent = program_->globals;
  Interpreter interpreter(limits, today, top);
  try {
    const Value parsed = parse_json_value(variables);
    if (!parsed.is_dict()) fail_render("the variables must be a JSON object");
    for (const auto& [name, value] : parsed.as_dict().entries) top->set(name.as_string(), value);
    std::string out;
    interpreter.execute(program_->body, out);
    return out;
  } catch (const Failure& failure) {
    throw TemplateError(interpreter.line(), failure.what());
  }
}

}  // namespace pagedgen::jinja
