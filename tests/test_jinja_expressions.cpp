// Jinja expressions with Python's meaning: how values print, arithmetic, ~, comparisons,
// in, and/or/not, conditional expressions, % formatting, items, attributes and slices, the
// str and dict methods, undefined values, and the globals. Expected strings: jinja2 3.1's
// output (test_jinja_render.h).
#include <doctest/doctest.h>

#include "test_jinja_render.h"

using namespace pagedgen::test;

TEST_CASE("jinja: values print as Python prints them") {
  CHECK(render("{{ 1 }} {{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e-5 }} {{ 1e16 }} {{ 123456789.125 }} {{ -0.0 }} {{ 3.10 }}") ==
        "1 1.0 0.30000000000000004 1e-05 1e+16 123456789.125 -0.0 3.1");
  CHECK(render("{{ true }} {{ false }} {{ none }} {{ [1, 'a', none, true, 1.0] }} {{ {'a': [1], 'b': {'c': none}} }} "
               "{{ ('a', 1) }} {{ (1,) }}") ==
        "True False None [1, 'a', None, True, 1.0] {'a': [1], 'b': {'c': None}} ('a', 1) (1,)");
  CHECK(
      render("{{ \"it's\" }} {{ ['it\\'s', 'q\"', 'a\\nb\\\\'] }} {{ ['\\u00a0', '\\u200b', '\303\251', '\\x7f'] }}") ==
      "it's [\"it's\", 'q\"', 'a\\nb\\\\'] ['\\xa0', '\\u200b', '\303\251', '\\x7f']");
  CHECK(
      render(
          "{{ d }} {{ l }} {{ z }} {{ m.items() | list }}",
          R"({"d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "n": 3, "f": 2.5, "z": null, "e": "", "m": {"role": "user", "content": "Hi"}})") ==
      "{'b': 1, 'a': 2} [3, 1, 2] None [('role', 'user'), ('content', 'Hi')]");
}

TEST_CASE("jinja: arithmetic as Python's") {
  CHECK(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 4 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 "
               "}} {{ 7.5 // 2 }} {{ 7.5 % 2 }}") == "3 -4 1 2 3.5 2.0 1024 0.5 3.0 1.5");
  CHECK(render(
            "{{ 1 + 2 * 3 - 4 / 2 }} {{ (1 + 2) * 3 }} {{ -2 ** 2 }} {{ 2 ** 3 ** 2 }} {{ true + 1 }} {{ 1 + 1.5 }}") ==
        "5.0 9 4 64 2 2.5");
  CHECK(render("{{ 'ab' + 'cd' }} {{ [1] + [2] }} {{ 'ab' * 3 }} {{ 2 * 'x' }} {{ [0] * 3 }} {{ 'ab' * -1 }}") ==
        "abcd [1, 2] ababab xx [0, 0, 0] ");
}

TEST_CASE("jinja: ~ joins as text, undefined as nothing") {
  CHECK(render("{{ 'x' ~ 1 ~ none ~ undefined_name ~ [1] }}") == "x1None[1]");
  CHECK(render("{{ 2 * 3 ~ 4 }} {{ 1 ~ (2 + 3) }}") == "64 15");
}

TEST_CASE("jinja: comparisons, in and not in, and, or and not") {
  CHECK(render("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ 1 == true }} {{ 'a' != 'b' }} {{ 'abc' < 'abd' }} {{ "
               "[1, 2] < [1, 3] }} {{ 2 >= 2 }} {{ 1 <= 0 }}") == "True False True True True True True True False");
  CHECK(
      render(
          "{{ 'a' in 'cat' }} {{ 2 not in l }} {{ 'b' in d }} {{ 'role' in m }} {{ 'x' in m }} {{ 1 in undefined_name "
          "}}",
          R"({"d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "n": 3, "f": 2.5, "z": null, "e": "", "m": {"role": "user", "content": "Hi"}})") ==
      "True False True True False False");
  CHECK(
      render("{{ not 1 }} {{ 1 and 0 }} {{ 0 or 'x' }} {{ none or [] }} {{ 1 and 'last' }} {{ not true == false }}") ==
      "False 0 x [] last True");
}

TEST_CASE("jinja: conditional expressions") {
  CHECK(render("{{ 'yes' if 1 else 'no' }} {{ 'yes' if 0 else 'no' }} [{{ 'only' if 0 }}] {{ 1 if 0 else 2 if 0 else 3 "
               "}}") == "yes no [] 3");
}

TEST_CASE("jinja: % formatting") {
  CHECK(render("{{ '%s-%d-%05.2f-%r-%%' % ('a', 3, 2.5, 'x') }} {{ '%s' % 'solo' }} {{ '%(a)s' % {'a': 1} }} {{ '%x' % "
               "255 }} {{ '%.3f' % 3.14159 }}") == "a-3-02.50-'x'-% solo 1 ff 3.142");
  CHECK(render("{{ '%5s|%-5s|' % ('a', 'b') }} {{ '%03d' % 7 }} {{ '%+d' % 5 }} {{ '%s' % [1, 2] }} {{ 'no conversion' "
               "% [1, 2] }} {{ '%.2s' % 'abc' }}") == "    a|b    | 007 +5 [1, 2] no conversion ab");
}

TEST_CASE("jinja: item and attribute access, slicing with steps and negative indices") {
  CHECK(
      render(
          "{{ l[0] }} {{ l[-1] }} {{ l[1:] }} {{ l[::-1] }} {{ l[::2] }} {{ l[:-1] }} {{ l[10:20] }} [{{ l[5] }}] {{ "
          "l.0 }}",
          R"({"d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "n": 3, "f": 2.5, "z": null, "e": "", "m": {"role": "user", "content": "Hi"}})") ==
      "3 2 [1, 2] [2, 1, 3] [3, 2] [3, 1] [] [] 3");
  CHECK(render(
            "{{ 'hello'[1:3] }} {{ 'h\303\251llo'[1] }} {{ 'hello'[-2:] }} {{ 'abcdef'[5:1:-2] }} {{ 'abc'[::-1] }}") ==
        "el \303\251 lo fd cba");
  CHECK(
      render(
          "{{ m.role }} {{ m['role'] }} [{{ m.missing }}] {{ m.missing is defined }} {{ d.a }} {{ d['b'] }}",
          R"({"d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "n": 3, "f": 2.5, "z": null, "e": "", "m": {"role": "user", "content": "Hi"}})") ==
      "user user [] False 2 1");
}

TEST_CASE("jinja: string methods") {
  CHECK(
      render(
          "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ s.strip(' Hd') }}|{{ 'xxhixx'.strip('x') }}|{{ "
          "'\\u00a0h\303\251\\u3000'.strip() }}",
          R"({"d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "n": 3, "f": 2.5, "z": null, "e": "", "m": {"role": "user", "content": "Hi"}})") ==
      "Hello World|Hello World  |  Hello World|ello Worl|hi|h\303\251");
  CHECK(render("{{ ' a  b '.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a b c'.split(' ', 1) }} {{ ''.split() }} {{ "
               "'a<sep>b'.split('<sep>') }}") == "['a', 'b'] ['a', 'b', '', 'c'] ['a', 'b c'] [] ['a', 'b']");
  CHECK(render("{{ 'abc'.startswith('a') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'Hello'.upper() }} {{ 'Hello'.lower() "
               "}} {{ \"they're bill's\".title() }} {{ 'hELLO wORLD'.capitalize() }}") ==
        "True True HELLO hello They'Re Bill'S Hello world");
  CHECK(render("{{ 'aaa'.replace('a', 'b') }} {{ 'aaa'.replace('a', 'b', 2) }} {{ '{} and {name}'.format(1, name='n') "
               "}} {{ '{:>5}|{:.2f}'.format('a', 3.14159) }}") == "bbb bba 1 and n     a|3.14");
  CHECK(render("{{ '-'.join(['a', 'b']) }} {{ 'banana'.count('a') }} {{ 'banana'.find('n') }} {{ 'banana'.rfind('n') "
               "}} {{ 'x'.find('y') }}") == "a-b 3 2 4 -1");
}

TEST_CASE("jinja: list methods that do not change the list") {
  CHECK(render("{{ [1, 2, 1].count(1) }} {{ ['a', 'b'].index('b') }}") == "2 1");
}

TEST_CASE("jinja: dict methods") {
  CHECK(
      render(
          "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %} {{ d.keys() | list }} {{ d.values() | list }} {{ "
          "d.get('a') }} {{ d.get('x', 'fallback') }} {{ d.get('x') }}",
          R"({"d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "n": 3, "f": 2.5, "z": null, "e": "", "m": {"role": "user", "content": "Hi"}})") ==
      "b=1;a=2; ['b', 'a'] [1, 2] 2 fallback None");
}

TEST_CASE("jinja: undefined values print as nothing, iterate as nothing and are false") {
  CHECK(render("[{{ nothing }}] [{% for x in nothing %}x{% endfor %}] {{ nothing is defined }} {{ nothing is undefined "
               "}} {{ not nothing }} {{ nothing | length }} {{ nothing | list }}") == "[] [] False True True 0 []");
  CHECK(render("{{ nothing == nothing }} {{ nothing is none }} {{ nothing | default('fallback') }} [{{ nothing | "
               "string }}] {{ nothing is iterable }}") == "True False fallback [] True");
  CHECK(
      render(
          "[{{ m.missing }}] [{{ z.anything }}] [{{ d.x.y if false }}]",
          R"({"d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "n": 3, "f": 2.5, "z": null, "e": "", "m": {"role": "user", "content": "Hi"}})") ==
      "[] [] []");
}

TEST_CASE("jinja: globals: range, dict, namespace, strftime_now") {
  CHECK(
      render("{{ range(3) | list }} {{ range(1, 10, 3) | list }} {{ range(5, 0, -2) | list }} {{ range(0) | list }}") ==
      "[0, 1, 2] [1, 4, 7] [5, 3, 1] []");
  CHECK(render("{{ dict(a=1, b=2) }} {{ namespace(a=1).a }}") == "{'a': 1, 'b': 2} 1");
  CHECK(render("{{ strftime_now('%Y-%m-%d %b %B %y %e %a %A %H:%M:%S %%') }} {{ strftime_now('%d %b %Y') }}") ==
        "2026-12-06 Dec December 26  6 Sun Sunday 00:00:00 % 06 Dec 2026");
}
