// The JSON writer of the stats, plan and sweep files (core/util/json_writer.h): the exact
// text of each layout, escaping, and reals at 6 significant digits.
#include <doctest/doctest.h>

#include "util/json_writer.h"

using namespace pagedgen;

TEST_CASE("an object inline: fields in order, joined by \", \", strings escaped, reals at 6 digits") {
  JsonObject o;
  o.add_int("n", -3).add_real("r", 2.0 / 3.0).add_bool("b", false).add_string("s", "a\"b\n").add_raw("id", "null");
  CHECK(o.inline_text() == R"({"n": -3, "r": 0.666667, "b": false, "s": "a\"b\n", "id": null})");
  CHECK(JsonObject().inline_text() == "{}");
  CHECK(json_real(1e-7) == "1e-07");
  CHECK(json_real(100.0) == "100");
}

TEST_CASE("an object as lines: one line per field or per same_line() group, nested values inline") {
  JsonArray rows(/*one_per_line=*/true);
  rows.add_object(JsonObject().add_int("a", 1)).add_object(JsonObject().add_int("a", 2));
  JsonArray empty;
  const std::string text = JsonObject()
                               .add_string("input", "in.jsonl")
                               .add_int("lines", 4)
                               .same_line()
                               .add_int("blank_lines", 1)
                               .add_object("inner", JsonObject().add_int("x", 1).add_array("list", empty))
                               .add_array("rows", rows)
                               .lines_text();
  CHECK(text ==
        "{\n"
        "  \"input\": \"in.jsonl\",\n"
        "  \"lines\": 4, \"blank_lines\": 1,\n"
        "  \"inner\": {\"x\": 1, \"list\": []},\n"
        "  \"rows\": [\n"
        "    {\"a\": 1},\n"
        "    {\"a\": 2}\n"
        "  ]\n"
        "}\n");
}

TEST_CASE("an array inline joins its elements by \", \"; one per line, an empty one is []") {
  JsonArray inline_array;
  inline_array.add_object(JsonObject().add_int("k", 0)).add_object(JsonObject().add_int("k", 1));
  CHECK(inline_array.text() == R"([{"k": 0}, {"k": 1}])");
  CHECK(JsonArray(true).text() == "[]");
}
