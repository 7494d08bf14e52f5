// The jinja lexer's rules as transformers configures jinja2: trim_blocks, lstrip_blocks,
// `-` and `+` whitespace control, comments, raw blocks, the source's last newline, and the
// literals inside tags. Expected strings: jinja2 3.1's output (test_jinja_render.h).
#include <doctest/doctest.h>

#include "test_jinja_render.h"

using namespace pagedgen::test;

TEST_CASE("jinja: trim_blocks drops the newline after a block tag, not after an output tag") {
  CHECK(render("{% if true %}\nyes\n{% endif %}\nafter") == "yes\nafter");
  CHECK(render("{{ 'a' }}\n{{ 'b' }}") == "a\nb");
  CHECK(render("{% set x = 1 %}\n{{ x }}\n") == "1");
}

TEST_CASE("jinja: lstrip_blocks drops the spaces before a block tag that starts a line") {
  CHECK(render("a\n    {% if true %}\n    b\n    {% endif %}\nc") == "a\n    b\nc");
  CHECK(render("  {{ 'x' }}  {% if true %}y{% endif %}") == "  x  y");
  CHECK(render("a  {% if true %}b{% endif %}") == "a  b");
  CHECK(render("\t{% set x = 1 %}\n\t{{ x }}\n") == "\t1");
}

TEST_CASE("jinja: a minus strips the whitespace on its side of the tag") {
  CHECK(render("a\n  {%- if true %}\n  b\n  {% endif -%}\nc") == "a  b\nc");
  CHECK(render("{{- 'a' -}}\n\n{{- 'b' }}") == "ab");
  CHECK(render("{% for i in range(3) -%}\n  {{ i }}\n{%- endfor %}") == "012");
  CHECK(render("x {{- ' y ' -}} z") == "x y z");
}

TEST_CASE("jinja: a plus keeps the whitespace lstrip_blocks and trim_blocks would drop") {
  CHECK(render("a\n  {%+ if true %}b{% endif +%}\nc") == "a\n  b\nc");
  CHECK(render("  {%+ set x = 1 %}|") == "  |");
}

TEST_CASE("jinja: comments vanish, with the same whitespace rules as block tags") {
  CHECK(render("line1\n    {# comment #}\nline2") == "line1\nline2");
  CHECK(render("x {# c -#}   y") == "x y");
  CHECK(render("a {#- c #} b") == "a b");
  CHECK(render("{# a\nmultiline {{ comment }} #}z") == "z");
}

TEST_CASE("jinja: raw blocks are text, with whitespace control at both ends") {
  CHECK(render("{% raw %}{{ not rendered }} {% if %}{% endraw %}") == "{{ not rendered }} {% if %}");
  CHECK(render("{%- raw -%}  {{ x }}  {%- endraw -%}  after") == "{{ x }}after");
  CHECK(render("  {% raw %}\n  x\n  {% endraw %}\n  y") == "\n  x\n  y");
}

TEST_CASE("jinja: one trailing newline of the source is dropped, CRLF reads as LF") {
  CHECK(render("text\n") == "text");
  CHECK(render("text\n\n") == "text\n");
  CHECK(render("{% if true %}a{% endif %}\015\nb\015\n") == "ab");
}

TEST_CASE("jinja: string literals take Python's escapes and join when adjacent") {
  CHECK(render("{{ 'a\\nb\\t\\\\c' }}") == "a\nb\t\\c");
  CHECK(render("{{ \"\\u00e9\\x41\\101\" }}") == "\303\251AA");
  CHECK(render("{{ 'it\\'s' }}") == "it's");
  CHECK(render("{{ 'a' \"b\" 'c' }}") == "abc");
  CHECK(render("{{ '\\d' }}") == "\\d");
}

TEST_CASE("jinja: number literals: ints with underscores and prefixes, floats with exponents") {
  CHECK(render("{{ 1_000 }} {{ 0x1F }} {{ 0b101 }} {{ 0o17 }} {{ 1.5 }} {{ 1e3 }} {{ 2.5e-3 }}") ==
        "1000 31 5 15 1.5 1000.0 0.0025");
}
