// OutputWriter and the plain line format: exact bytes of each line shape, and input order
// kept when results complete out of order.
#include <doctest/doctest.h>

#include <sstream>

#include "io/output_writer.h"
#include "io/plain_output.h"
#include "util/error.h"

using namespace pagedgen;

namespace {

RequestOutput single(uint64_t index, std::optional<std::string> id_json, std::string text, FinishReason reason,
                     int64_t num_tokens) {
  RequestOutput output;
  output.index = index;
  output.id_json = std::move(id_json);
  output.choices = {Completion{std::move(text), reason, num_tokens}};
  output.prompt_tokens = 12;
  output.cached_tokens = 8;
  return output;
}

RequestError error_record(uint64_t index, std::optional<std::string> id_json) {
  return RequestError{index, std::move(id_json), "invalid_type", "prompt must be a string, got a number"};
}

}  // namespace

TEST_CASE("plain line shapes, byte for byte") {
  CHECK(format_plain_line(single(3, "\"q-1\"", "Hi \"there\"\n", FinishReason::kStop, 5)) ==
        R"({"id":"q-1","index":3,"text":"Hi \"there\"\n","finish_reason":"stop",)"
        R"("usage":{"prompt_tokens":12,"completion_tokens":5,"cached_tokens":8}})");
  CHECK(format_plain_line(single(0, std::nullopt, "", FinishReason::kLength, 16)) ==
        R"({"id":null,"index":0,"text":"","finish_reason":"length",)"
        R"("usage":{"prompt_tokens":12,"completion_tokens":16,"cached_tokens":8}})");
  // Numeric ids are echoed as written; text is escaped and invalid UTF-8 repaired.
  CHECK(format_plain_line(single(18446744073709551615ull, "1.5e3", "caf\xC3\xA9 \x01 \xFF", FinishReason::kStop, 2)) ==
        "{\"id\":1.5e3,\"index\":18446744073709551615,\"text\":\"caf\xC3\xA9 \\u0001 \xEF\xBF\xBD\",\"finish_reason\":\"stop\","
        "\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":2,\"cached_tokens\":8}}");

  RequestOutput multi = single(7, "17", "a", FinishReason::kStop, 3);
  multi.choices.push_back(Completion{"b\tc", FinishReason::kLength, 10});
  multi.choices.push_back(Completion{"", FinishReason::kStop, 1});
  CHECK(format_plain_line(multi) ==
        R"({"id":17,"index":7,"choices":[{"index":0,"text":"a","finish_reason":"stop"},)"
        R"({"index":1,"text":"b\tc","finish_reason":"length"},{"index":2,"text":"","finish_reason":"stop"}],)"
        R"("usage":{"prompt_tokens":12,"completion_tokens":14,"cached_tokens":8}})");

  CHECK(format_plain_line(error_record(4, "\"x\"")) ==
        R"({"id":"x","index":4,"error":{"code":"invalid_type","message":"prompt must be a string, got a number"}})");
  CHECK(format_plain_line(RequestError{9, std::nullopt, "invalid_json", "bad \"quote\""}) ==
        R"({"id":null,"index":9,"error":{"code":"invalid_json","message":"bad \"quote\""}})");
}

TEST_CASE("records completed out of order are written in input order") {
  std::ostringstream out;
  OutputWriter writer(out, format_plain_line);
  // Input lines 0, 2, 3, 5, 6 are non-blank (1 and 4 were blank).
  for (uint64_t index : {0, 2, 3, 5, 6}) writer.expect(index);
  CHECK(writer.num_waiting() == 5);

  writer.complete(single(3, "\"c\"", "three", FinishReason::kStop, 1));
  writer.complete(error_record(5, std::nullopt));
  CHECK(out.str().empty());
  CHECK(writer.num_written() == 0);

  writer.complete(single(0, "\"a\"", "zero", FinishReason::kStop, 1));
  const std::string line0 = format_plain_line(single(0, "\"a\"", "zero", FinishReason::kStop, 1)) + "\n";
  CHECK(out.str() == line0);
  CHECK(writer.num_written() == 1);

  writer.complete(single(2, "\"b\"", "two", FinishReason::kLength, 1));  // releases 2, 3 and 5
  CHECK(writer.num_written() == 4);
  CHECK(writer.num_waiting() == 1);

  writer.expect(9);
  writer.complete(single(9, std::nullopt, "nine", FinishReason::kStop, 1));
  CHECK(writer.num_written() == 4);  // 6 still missing
  writer.complete(single(6, std::nullopt, "six", FinishReason::kStop, 1));
  CHECK(writer.num_written() == 6);
  CHECK(writer.num_waiting() == 0);

  std::string expected = line0;
  expected += format_plain_line(single(2, "\"b\"", "two", FinishReason::kLength, 1)) + "\n";
  expected += format_plain_line(single(3, "\"c\"", "three", FinishReason::kStop, 1)) + "\n";
  expected += format_plain_line(error_record(5, std::nullopt)) + "\n";
  expected += format_plain_line(single(6, std::nullopt, "six", FinishReason::kStop, 1)) + "\n";
  expected += format_plain_line(single(9, std::nullopt, "nine", FinishReason::kStop, 1)) + "\n";
  CHECK(out.str() == expected);
}

TEST_CASE("a failing stream is an Error naming how far the output got") {
  std::ostringstream out;
  OutputWriter writer(out, format_plain_line);
  writer.expect(0);
  writer.expect(1);
  writer.complete(single(0, std::nullopt, "a", FinishReason::kStop, 1));
  out.setstate(std::ios::badbit);
  CHECK_THROWS_WITH_AS(writer.complete(single(1, std::nullopt, "b", FinishReason::kStop, 1)),
                       "writing the output failed after 2 lines (disk full or closed pipe?)", Error);
}
