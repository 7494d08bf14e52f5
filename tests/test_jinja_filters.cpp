// The jinja filters and tests chat templates use, tojson with transformers' arguments among
// them. Expected strings: jinja2 3.1's output (test_jinja_render.h).
#include <doctest/doctest.h>

#include "test_jinja_render.h"

using namespace pagedgen::test;

TEST_CASE("jinja: text filters: trim, upper, lower, capitalize, title, replace, string, safe, escape, wordcount") {
  CHECK(
      render(
          "{{ s | trim }}|{{ 'xxhixx' | trim('x') }}|{{ s | upper }}|{{ s | lower }}|{{ 'hello World' | capitalize "
          "}}|{{ \"they're-here (now)\" | title }}",
          R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"city": "Paris", "days": [1, 2.5, null, true]}}}]}], "d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "e": "", "z": null})") ==
      "Hello World|hi|  HELLO WORLD  |  hello world  |Hello world|They're-Here (Now)");
  CHECK(render("{{ 'aXa' | replace('a', 'b') }} {{ 'aaa' | replace('a', 'b', 1) }} {{ 1 | string }} {{ [1] | string }} "
               "{{ 'x' | safe }} {{ '<a href=\"x\">&\\'' | escape }} {{ 'a b  c_d' | wordcount }}") ==
        "bXb baa 1 [1] x &lt;a href=&#34;x&#34;&gt;&amp;&#39; 3");
}

TEST_CASE("jinja: indent follows jinja2 3.1: first line and blank lines only when asked") {
  CHECK(render("{{ 'a\\nb\\n\\nc' | indent(2) }}|") == "a\n  b\n\n  c|");
  CHECK(render("{{ 'a\\nb\\n\\nc' | indent(2, true, true) }}|") == "  a\n  b\n  \n  c|");
  CHECK(render("{{ 'x\\ny' | indent('>> ', first=true) }}|") == ">> x\n>> y|");
  CHECK(render("{{ 'a\\n' | indent }}|{{ '' | indent(first=true) }}|") == "a\n|    |");
}

TEST_CASE("jinja: length, count, first, last, list, items") {
  CHECK(
      render(
          "{{ l | length }} {{ d | length }} {{ s | length }} {{ 'h\303\251llo' | count }} {{ l | first }} {{ l | last "
          "}} {{ 'abc' | first }} {{ 'abc' | list }} {{ d | items | list }}",
          R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"city": "Paris", "days": [1, 2.5, null, true]}}}]}], "d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "e": "", "z": null})") ==
      "3 2 15 5 3 2 a ['a', 'b', 'c'] [('b', 1), ('a', 2)]");
  CHECK(
      render(
          "[{{ [] | first }}] {{ (messages | last).role }} {{ messages | first | tojson }}",
          R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"city": "Paris", "days": [1, 2.5, null, true]}}}]}], "d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "e": "", "z": null})") ==
      "[] assistant {\"role\": \"system\", \"content\": \"S\"}");
}

TEST_CASE("jinja: join, sort, unique, reverse, sum, min, max") {
  CHECK(
      render(
          "{{ l | join }} {{ l | join(', ') }} {{ messages | join('/', attribute='role') }} {{ l | sort }} {{ l | "
          "sort(reverse=true) }} {{ ['B', 'a', 'C'] | sort }} {{ ['B', 'a', 'C'] | sort(case_sensitive=true) }}",
          R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"city": "Paris", "days": [1, 2.5, null, true]}}}]}], "d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "e": "", "z": null})") ==
      "312 3, 1, 2 system/user/assistant [1, 2, 3] [3, 2, 1] ['a', 'B', 'C'] ['B', 'C', 'a']");
  CHECK(render("{{ [{'a': 2}, {'a': 1}] | sort(attribute='a') }} {{ [3, 1, 3, 'A', 'a'] | unique | list }} {{ 'abc' | "
               "reverse }} {{ [1, 2] | reverse | list }} {{ [1, 2, 3] | sum }} {{ [1, 5, 3] | max }} {{ [4, 2, 8] | "
               "min }}") == "[{'a': 1}, {'a': 2}] [3, 1, 'A'] cba [2, 1] 6 5 2");
}

TEST_CASE("jinja: select, reject, selectattr, rejectattr and map") {
  CHECK(
      render(
          "{{ messages | selectattr('role', 'equalto', 'user') | list | length }} {{ messages | rejectattr('role', "
          "'eq', 'user') | map(attribute='role') | join(',') }}",
          R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"city": "Paris", "days": [1, 2.5, null, true]}}}]}], "d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "e": "", "z": null})") ==
      "1 system,assistant");
  CHECK(
      render(
          "{{ messages | selectattr('tool_calls') | list | length }} {{ messages | selectattr('tool_calls', 'defined') "
          "| list | length }} {{ messages | selectattr('content', 'none') | list | length }}",
          R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"city": "Paris", "days": [1, 2.5, null, true]}}}]}], "d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "e": "", "z": null})") ==
      "1 1 1");
  CHECK(render("{{ [1, 2, 3, 4] | select('odd') | list }} {{ [1, 2, 3, 4] | reject('even') | list }} {{ [0, 1, '', "
               "'x'] | select | list }} {{ [1, 5, 2] | select('gt', 1) | list }}") == "[1, 3] [1, 3] [1, 'x'] [5, 2]");
  CHECK(
      render(
          "{{ ['a', 'b'] | map('upper') | list }} {{ l | map('string') | join('-') }} {{ messages | "
          "map(attribute='missing', default='m') | list }} {{ ['ab'] | map('replace', 'a', 'x') | list }}",
          R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"city": "Paris", "days": [1, 2.5, null, true]}}}]}], "d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "e": "", "z": null})") ==
      "['A', 'B'] 3-1-2 ['m', 'm', 'm'] ['xb']");
}

TEST_CASE("jinja: safe makes a Markup: what + adds to it is escaped, ~ is plain text") {
  CHECK(render("{{ 'Use \\'' | safe + '<b>\"x\"' + '\\'' | safe }} {{ '<' + ('&' | safe) }} {{ ('<' | safe) ~ '<' }} "
               "{{ '<i>' | escape + '<' }} {{ '<i>' | e | e }}") ==
        "Use '&lt;b&gt;&#34;x&#34;' &lt;& << &lt;i&gt;&lt; &lt;i&gt;");
}

TEST_CASE("jinja: select, selectattr and map over none give nothing, as jinja2's walk only a true sequence") {
  CHECK(render("{{ none | selectattr('type', 'equalto', 'x') | list | length }} {{ none | reject('none') | list }} {{ "
               "none | map('upper') | list }}") == "0 [] []");
}

TEST_CASE("jinja: default, with and without boolean") {
  CHECK(
      render(
          "{{ nothing | default('fallback') }} [{{ e | default('fallback') }}] {{ e | default('fallback', true) }} {{ "
          "z | d('x', boolean=true) }} {{ z | default('x') }}",
          R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"city": "Paris", "days": [1, 2.5, null, true]}}}]}], "d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "e": "", "z": null})") ==
      "fallback [] fallback x None");
}

TEST_CASE("jinja: int, float, abs, round") {
  CHECK(render("{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ '0x1f' | int(base=16) }} {{ ' "
               "7 ' | int }} {{ 1.9 | int }} {{ true | int }}") == "42 4 0 7 31 7 1 1");
  CHECK(render("{{ '3.5' | float }} {{ 3 | float }} {{ 'x' | float }} {{ -3 | abs }} {{ -2.5 | abs }} {{ 2.567 | "
               "round(2) }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 3 | round }} {{ 2.1 | round(0, 'ceil') }} {{ 2.9 | "
               "round(1, 'floor') }}") == "3.5 3.0 0.0 3 2.5 2.57 2.0 4.0 3 3.0 2.9");
}

TEST_CASE("jinja: tojson writes what json.dumps writes, with transformers' arguments") {
  CHECK(
      render(
          "{{ messages[2].tool_calls[0].function.arguments | tojson }}",
          R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"city": "Paris", "days": [1, 2.5, null, true]}}}]}], "d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "e": "", "z": null})") ==
      "{\"city\": \"Paris\", \"days\": [1, 2.5, null, true]}");
  CHECK(
      render(
          "{{ d | tojson(indent=2) }}|{{ d | tojson(sort_keys=true) }}|{{ d | tojson(separators=(',', ':')) }}",
          R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"city": "Paris", "days": [1, 2.5, null, true]}}}]}], "d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "e": "", "z": null})") ==
      "{\n  \"b\": 1,\n  \"a\": 2\n}|{\"a\": 2, \"b\": 1}|{\"b\":1,\"a\":2}");
  CHECK(render("{{ '\303\251\"\\n\\u0001' | tojson }} {{ '\303\251' | tojson(ensure_ascii=true) }} {{ none | tojson }} "
               "{{ [] | tojson(indent=4) }} {{ {'a': {}} | tojson(indent=1) }} {{ 1.0 | tojson }} {{ [1e100, -0.5] | "
               "tojson }} {{ {1: 'int key'} | tojson }}") ==
        "\"\303\251\\\"\\n\\u0001\" \"\\u00e9\" null [] {\n \"a\": {}\n} 1.0 [1e+100, -0.5] {\"1\": \"int key\"}");
}

TEST_CASE("jinja: tests") {
  CHECK(
      render(
          "{{ x is defined }} {{ x is undefined }} {{ z is none }} {{ s is string }} {{ d is mapping }} {{ l is "
          "iterable }} {{ s is iterable }} {{ 3 is iterable }} {{ l is sequence }} {{ d is sequence }}",
          R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"city": "Paris", "days": [1, 2.5, null, true]}}}]}], "d": {"b": 1, "a": 2}, "l": [3, 1, 2], "s": "  Hello World  ", "e": "", "z": null})") ==
      "False True True True True True True False True True");
  CHECK(
      render(
          "{{ 3 is number }} {{ 3 is integer }} {{ 2.5 is float }} {{ 2.5 is integer }} {{ true is boolean }} {{ 1 is "
          "boolean }} {{ true is number }} {{ true is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }}") ==
      "True True True False True False True True False True False");
  CHECK(render("{{ 'a' is equalto 'a' }} {{ 1 is eq 2 }} {{ 3 is odd }} {{ 3 is even }} {{ 2.5 is odd }} {{ 4.0 is "
               "even }} {{ 9 is divisibleby 3 }} {{ 'a' is in 'abc' }} {{ none is sameas none }} {{ 2 is gt 1 }} {{ "
               "'ab' is lower }} {{ x is not none }} {{ not x is defined }}") ==
        "True False True False False True True True True True True True True");
}
