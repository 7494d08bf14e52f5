// The jinja statements chat templates use: if/elif/else, for with loop.* and else and a
// filter in its header, break/continue, set (namespace attributes, tuples, block sets),
// macros with caller(), call, filter and with blocks; and jinja2's scoping (a set inside a
// loop stays there). Expected strings: jinja2 3.1's output (test_jinja_render.h).
#include <doctest/doctest.h>

#include "test_jinja_render.h"

using namespace pagedgen::test;

TEST_CASE("jinja: if, elif and else pick the first true branch") {
  CHECK(render("{% if 0 %}a{% elif '' %}b{% elif [1] %}c{% else %}d{% endif %}") == "c");
  CHECK(render("{% if none %}a{% else %}b{% endif %}") == "b");
  CHECK(
      render(
          "{% if messages[0]['role'] == 'system' %}sys{% endif %}",
          R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}]})") ==
      "sys");
}

TEST_CASE("jinja: for loops expose loop.index, index0, first, last, length, revindex and revindex0") {
  CHECK(
      render(
          "{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ "
          "loop.revindex }}{{ loop.revindex0 }} {% endfor %}",
          R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}]})") ==
      "10TrueFalse443 21FalseFalse432 32FalseFalse421 43FalseTrue410 ");
}

TEST_CASE("jinja: for loops expose loop.previtem, loop.nextitem and loop.cycle") {
  CHECK(
      render(
          "{% for m in messages %}{{ loop.cycle('odd', 'even') }}:{% if not loop.first %}{{ loop.previtem.role }}{% "
          "endif %}>{% if not loop.last %}{{ loop.nextitem.role }}{% endif %} {% endfor %}",
          R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}]})") ==
      "odd:>user even:system>assistant odd:user>user even:assistant> ");
  CHECK(render("{% for x in [1, 2] %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}") == "[|2][1|]");
}

TEST_CASE("jinja: for with else, a filter in the header, unpacking and dict iteration") {
  CHECK(render("{% for x in [] %}x{% else %}empty{% endfor %}") == "empty");
  CHECK(
      render(
          "{% for m in messages if m.role != 'system' %}{{ loop.index }}/{{ loop.length }}{{ m.role[0] }} {% endfor %}",
          R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}]})") ==
      "1/3u 2/3a 3/3u ");
  CHECK(render("{% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }}{% endfor %}{% for (k, v) in {'x': 1}.items() %}{{ k "
               "}}{{ v }}{% endfor %}") == "1234x1");
  CHECK(render("{% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %}{% for c in 'h\303\251llo' %}{{ c }}.{% endfor %}") ==
        "bah.\303\251.l.l.o.");
  CHECK(render("{% for x in undefined_name %}a{% else %}nothing{% endfor %}") == "nothing");
}

TEST_CASE("jinja: break and continue") {
  CHECK(render("{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif "
               "%}{{ i }}{% endfor %}") == "0134");
  CHECK(render("{% for i in range(3) %}{% for j in range(3) %}{% if j > i %}{% break %}{% endif %}{{ i }}{{ j }} {% "
               "endfor %}{% endfor %}") == "00 10 11 20 21 22 ");
}

TEST_CASE("jinja: set inside a loop does not leak out; a namespace carries values out") {
  CHECK(render("{% set x = 1 %}{% for i in range(2) %}{% set x = x + 10 %}{{ x }} {% endfor %}{{ x }}") == "11 11 1");
  CHECK(
      render(
          "{% set ns = namespace(found=false, count=0) %}{% for m in messages %}{% if m.role == 'user' %}{% set "
          "ns.found = true %}{% set ns.count = ns.count + 1 %}{% endif %}{% endfor %}{{ ns.found }} {{ ns.count }}",
          R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}]})") ==
      "True 2");
  CHECK(render("{% set ns = namespace(items=[]) %}{% for i in range(3) %}{% set ns.items = ns.items + [i] %}{% endfor "
               "%}{{ ns.items }}") == "[0, 1, 2]");
}

TEST_CASE("jinja: set: tuples, block sets and filtered block sets") {
  CHECK(render("{% set a, b = 1, 'two' %}{{ a }} {{ b }}") == "1 two");
  CHECK(render("{% set y %}block {{ 1 + 1 }}{% endset %}[{{ y }}]") == "[block 2]");
  CHECK(render("{% set y | upper | trim %}  shout {% endset %}[{{ y }}]") == "[SHOUT]");
  CHECK(render("{{ x }}{% set x = 5 %}{{ x }}") == "5");
}

TEST_CASE("jinja: macros: defaults, keyword arguments, varargs, kwargs and recursion") {
  CHECK(render("{% macro greet(name, greeting='Hello') %}{{ greeting }} {{ name }}!{% endmacro %}{{ greet('Bob') }} {{ "
               "greet('Al', greeting='Hi') }} {{ greet(name='Zoe') }}") == "Hello Bob! Hi Al! Hello Zoe!");
  CHECK(render("{% macro m(x) %}{{ x }} {{ varargs }} {{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k=4) }}") ==
        "1 (2, 3) {'k': 4}");
  CHECK(render("{% macro m(a, b=a) %}{{ a }}{{ b }}{% endmacro %}{{ m(1) }}{{ m(1, 2) }}") == "1112");
  CHECK(render("{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(5) }}") == "54321");
  CHECK(render("{% macro m() %}{{ y }}{% endmacro %}{% set y = 1 %}{{ m() }}{% set y = 2 %}{{ m() }}") == "12");
}

TEST_CASE("jinja: call blocks pass their body to the macro as caller()") {
  CHECK(render("{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner{% "
               "endcall %}") == "<b>inner</b>");
  CHECK(render("{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(item) each([1, "
               "2]) %}[{{ item }}]{% endcall %}") == "[1][2]");
}

TEST_CASE("jinja: filter blocks and with blocks") {
  CHECK(render("{% filter upper %}shout {{ 'this' }}{% endfilter %}") == "SHOUT THIS");
  CHECK(render("{% filter trim | title %}  two words  {% endfilter %}") == "Two Words");
  CHECK(render("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]") == "3[]");
}
