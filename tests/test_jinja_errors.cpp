// Jinja errors and budgets: what does not parse or render is a TemplateError naming the
// template line and what failed (where jinja2 raises, pagedgen fails too), and a render is
// bounded by steps, output bytes and depth, never by a timer.
#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "test_jinja_render.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

// The message of the TemplateError that parsing or rendering `source` throws.
std::string error_of(std::string_view source, std::string_view variables = "{}",
                     const jinja::RenderLimits& limits = {}) {
  try {
    const std::string text = render(source, variables, limits);
    FAIL("rendered without an error: ", text);
  } catch (const jinja::TemplateError& error) {
    return error.what();
  }
  return "";
}

std::string repeated(std::string_view text, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += text;
  return out;
}

}  // namespace

TEST_CASE("jinja: an unknown filter, test or tag names its line; inside an if only when it runs") {
  CHECK(error_of("a\n\n{{ x | foo }}") == "line 3: unknown filter 'foo'");
  CHECK(error_of("{{ x is foo }}") == "line 1: unknown test 'foo'");
  CHECK(error_of("\n{% foo %}") == "line 2: unknown tag 'foo'");
  // jinja2 defers those directly in an if or a conditional expression to when they run...
  CHECK(render("{% if false %}{{ x | foo }}{% endif %}ok") == "ok");
  CHECK(render("[{{ x | foo if false }}]") == "[]");
  CHECK(error_of("{% if true %}\n{{ x | foo }}{% endif %}") == "line 2: unknown filter 'foo'");
  // ...but not those in a loop or macro inside the if.
  CHECK(error_of("{% if false %}{% for i in [] %}\n{{ i | foo }}{% endfor %}{% endif %}") ==
        "line 2: unknown filter 'foo'");
  CHECK(error_of("{% if false %}{% macro m() %}{{ 1 is foo }}{% endmacro %}{% endif %}") ==
        "line 1: unknown test 'foo'");
}

TEST_CASE("jinja: an unclosed block names the block and the line it opened on") {
  CHECK(error_of("{% for m in messages %}") == "line 1: unclosed {% for %} (opened on line 1)");
  CHECK(error_of("a\n{% for x in y %}\n{% if x %}\nb") == "line 4: unclosed {% if %} (opened on line 3)");
  CHECK(error_of("{% macro m() %}") == "line 1: unclosed {% macro %} (opened on line 1)");
  CHECK(error_of("x\n{% endfor %}") == "line 2: unexpected {% endfor %}");
  CHECK(error_of("{% if true %}{% endfor %}{% endif %}") == "line 1: unexpected {% endfor %}");
}

TEST_CASE("jinja: unclosed tags, comments and strings, and expressions that do not parse") {
  CHECK(error_of("\n{{ 1 +") == "line 2: unclosed {{: no }} before the end");
  CHECK(error_of("{# open") == "line 1: unclosed comment: no #} before the end");
  CHECK(error_of("{{ 'open }}") == "line 1: unclosed string literal");
  CHECK(error_of("{{ 'a' ~ }}") == "line 1: unexpected '}}' in an expression");
  CHECK(error_of("{% raw %}x") == "line 1: unclosed {% raw %}: no {% endraw %} before the end");
}

TEST_CASE("jinja: raise_exception fails the render with its message and line") {
  CHECK(error_of("{% if true %}\n\n{{ raise_exception('Conversation roles must alternate') }}{% endif %}") ==
        "line 3: Conversation roles must alternate");
}

TEST_CASE("jinja: an undefined value's attribute, method or arithmetic fails as jinja2's UndefinedError") {
  CHECK(error_of("{{ nothing.strip() }}") == "line 1: 'nothing' is undefined");
  CHECK(error_of("{{ nothing.attribute }}") == "line 1: 'nothing' is undefined");
  CHECK(error_of("{{ m.missing.deeper }}", R"({"m": {}})") == "line 1: 'dict object' has no attribute 'missing'");
  CHECK(error_of("{{ m[0].x }}", R"({"m": []})") == "line 1: 'list object' has no element 0");
  CHECK(error_of("{{ nothing + 1 }}") == "line 1: 'nothing' is undefined");
  CHECK(error_of("{{ 'a'.nosuchmethod() }}") == "line 1: 'str object' has no attribute 'nosuchmethod'");
}

TEST_CASE("jinja: type errors Python raises fail the render") {
  CHECK(error_of("{{ 1 + 'a' }}") == "line 1: unsupported operand type(s) for +: 'int' and 'str'");
  CHECK(error_of("{{ 'a' < 1 }}") == "line 1: '<' not supported between instances of 'str' and 'int'");
  CHECK(error_of("{{ 1 / 0 }}") == "line 1: division by zero");
  CHECK(error_of("{% for x in 3 %}{% endfor %}") == "line 1: 'int' object is not iterable");
  CHECK(error_of("{{ none | tojson }}{{ nothing | tojson }}") ==
        "line 1: Object of type Undefined is not JSON serializable");
}

TEST_CASE("jinja: the sandbox refuses list and dict mutators") {
  CHECK(error_of("{{ [1].append(2) }}") == "line 1: access to attribute 'append' of 'list' object is unsafe.");
  CHECK(error_of("{{ {}.update({}) }}") == "line 1: access to attribute 'update' of 'dict' object is unsafe.");
  CHECK(render("[{{ [1].append }}]") == "[]");
}

TEST_CASE("jinja: range is bounded as jinja2's sandbox bounds it") {
  CHECK(render("{{ range(100000) | length }}") == "100000");
  CHECK(error_of("{% for i in range(10**9) %}{% endfor %}") ==
        "line 1: range too big: the sandbox blocks ranges larger than 100000 items, as jinja2's does");
}

TEST_CASE("jinja: the step budget stops a long loop") {
  jinja::RenderLimits small;
  small.max_steps = 100'000;
  CHECK(error_of("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "{}", small) ==
        "line 1: step budget exceeded: the template ran more than 100000 steps (max_steps)");
  small.max_steps = 1000;
  CHECK(render("{% for i in range(10) %}{{ i }}{% endfor %}", "{}", small) == "0123456789");
  CHECK(error_of("{% for i in range(1000) %}{{ i }}{% endfor %}", "{}", small) ==
        "line 1: step budget exceeded: the template ran more than 1000 steps (max_steps)");
}

TEST_CASE("jinja: the output budget stops a large output and large strings before they are built") {
  jinja::RenderLimits small;
  small.max_output_bytes = 100;
  CHECK(render(repeated("x", 100), "{}", small) == repeated("x", 100));
  CHECK(error_of("{% for i in range(1000) %}x{% endfor %}", "{}", small) ==
        "line 1: output budget exceeded: the template wrote more than 100 bytes (max_output_bytes)");
  CHECK(error_of("{{ 'x' * 10**15 }}") ==
        "line 1: output budget exceeded: a string of more than 16777216 bytes (max_output_bytes)");
  CHECK(error_of("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}") ==
        "line 1: output budget exceeded: a string of more than 16777216 bytes (max_output_bytes)");
}

TEST_CASE("jinja: a macro calling itself without end hits the depth limit") {
  CHECK(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}\n{{ f(0) }}") ==
        "line 1: depth limit exceeded: macro calls nested deeper than 100 (max_depth)");
  jinja::RenderLimits shallow;
  shallow.max_depth = 3;
  CHECK(render("{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(2) }}", "{}",
               shallow) == "21");
}

TEST_CASE("jinja: nesting deeper than the parser's limit is an error, not a stack overflow") {
  CHECK(render("{{ " + repeated("(", 150) + "1" + repeated(")", 150) + " }}") == "1");
  CHECK(error_of("{{ " + repeated("(", 100000) + "1" + repeated(")", 100000) + " }}") ==
        "line 1: nesting deeper than 200 levels (blocks and expressions)");
  CHECK(error_of(repeated("{% if true %}", 300) + repeated("{% endif %}", 300)) ==
        "line 1: nesting deeper than 200 levels (blocks and expressions)");
  CHECK(error_of("{{ " + repeated("not ", 100000) + "1 }}") ==
        "line 1: nesting deeper than 200 levels (blocks and expressions)");
  CHECK(error_of("{{ x" + repeated("[0]", 100000) + " }}") ==
        "line 1: nesting deeper than 200 levels (blocks and expressions)");
}

TEST_CASE("jinja: values nest at most 500 deep, and a namespace may hold itself") {
  CHECK(error_of("{% set ns = namespace(v=[]) %}{% for i in range(100000) %}{% set ns.v = [ns.v] %}{% endfor %}") ==
        "line 1: depth limit: a value nested deeper than 500 levels");
  CHECK(error_of("x", "{\"v\": " + repeated("[", 600) + repeated("]", 600) + "}") ==
        "line 1: depth limit: a value nested deeper than 500 levels");
  CHECK(render("{% set ns = namespace(a=1) %}{% set ns.self = ns %}{{ ns.self.self.a }}") == "1");
  CHECK(error_of("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns }}") ==
        "line 1: depth limit: a value nested deeper than 500 levels");
}

TEST_CASE("jinja: integers beyond 64 bits fail rather than wrap") {
  CHECK(render("{{ 2 ** 62 }}") == "4611686018427387904");
  CHECK(error_of("{{ 10 ** 100 }}") == "line 1: integer overflow in '**' (beyond 64 bits)");
  CHECK(error_of("{{ 9223372036854775807 + 1 }}") == "line 1: integer overflow in '+' (beyond 64 bits)");
}

TEST_CASE("jinja: the variables must be a JSON object") {
  CHECK(error_of("x", "[1]") == "line 1: the variables must be a JSON object");
  CHECK(error_of("x", "{").starts_with("line 1: the variables are not valid JSON"));
}

TEST_CASE("jinja: a parsed template renders many times, on several threads at once") {
  const jinja::Template chat = jinja::Template::parse(
      "{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}{% endfor %}{{ strftime_now('%d %b %Y') }}");
  std::vector<std::string> outputs(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < 50; ++n)
        outputs[i] = chat.render(R"({"messages": [{"role": "user", "content": " hi "}]})", kRenderDate);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& output : outputs) CHECK(output == "<user>hi06 Dec 2026");
}
