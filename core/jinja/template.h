// Chat templates as models ship them: a Jinja2 interpreter covering what Hugging Face chat
// templates use, configured as transformers configures jinja2 (trim_blocks, lstrip_blocks,
// loop controls, its tojson, raise_exception and strftime_now). A template is parsed once and
// rendered once per conversation; rendering is bounded by a fixed budget of steps, output
// bytes and call depth (never a timer), so whether a line renders does not depend on the
// machine.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "util/error.h"

namespace pagedgen::jinja {

// A template that does not parse, or a render that fails (raise_exception, an undefined
// value's method called, a budget spent): names the template's 1-based line and what failed.
class TemplateError : public Error {
 public:
  TemplateError(int line, const std::string& message);
  int line() const { return line_; }

 private:
  int line_;
};

// A render's budget. Exceeding one is a TemplateError naming it.
struct RenderLimits {
  std::uint64_t max_steps = 10'000'000;       // statements run, loop iterations, calls, filters
  std::size_t max_output_bytes = 16u << 20;  // bytes the template writes
  int max_depth = 100;                       // nested macro calls and expression depth
};

class Template {
 public:
  // Throws TemplateError (the line of the first problem: an unclosed block, an unknown tag,
  // an expression that does not parse).
  static Template parse(std::string_view source);

  // `variables`: the text of a JSON object whose members become the template's variables,
  // key order kept (messages, tools, documents, bos_token, eos_token, add_generation_prompt,
  // and whatever else the caller passes). `today`: the date strftime_now formats (at
  // 00:00:00). Throws TemplateError; the template itself is not changed (renders may run on
  // several threads at once).
  std::string render(std::string_view variables, std::chrono::year_month_day today,
                     const RenderLimits& limits = {}) const;

 private:
  struct Program;
  explicit Template(std::shared_ptr<const Program> program);
  std::shared_ptr<const Program> program_;
};

}  // namespace pagedgen::jinja
