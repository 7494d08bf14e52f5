// OutputWriter and the plain line format: exact bytes of each line shape, and input order
// kept when results complete out of order.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include "io/openai_batch_output.h"
#include "io/output_format.h"
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
  output.choices = {Completion{std::move(text), reason, num_tokens, {}, std::nullopt}};
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
        "{\"id\":1.5e3,\"index\":18446744073709551615,\"text\":\"caf\xC3\xA9 \\u0001 "
        "\xEF\xBF\xBD\",\"finish_reason\":\"stop\","
        "\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":2,\"cached_tokens\":8}}");

  RequestOutput multi = single(7, "17", "a", FinishReason::kStop, 3);
  multi.choices.push_back(Completion{"b\tc", FinishReason::kLength, 10, {}, std::nullopt});
  multi.choices.push_back(Completion{"", FinishReason::kStop, 1, {}, std::nullopt});
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

TEST_CASE("OpenAI batch line shapes, byte for byte: chat, completion, n > 1, error") {
  CHECK(
      format_openai_batch_line(single(3, "\"request-1\"", "Hi!", FinishReason::kStop, 5), {true, "gpt-x"}) ==
      R"({"id":"batch_req_3","custom_id":"request-1","response":{"status_code":200,"request_id":"req_3",)"
      R"("body":{"id":"chatcmpl-3","object":"chat.completion","created":0,"model":"gpt-x","choices":[)"
      R"({"index":0,"message":{"role":"assistant","content":"Hi!"},"logprobs":null,"finish_reason":"stop"}],)"
      R"("usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":8}}}},)"
      R"("error":null})");
  RequestOutput two = single(0, "\"c\"", "a", FinishReason::kLength, 4);
  two.choices.push_back(Completion{"b\n", FinishReason::kStop, 2, {}, std::nullopt});
  CHECK(
      format_openai_batch_line(two, {false, "m"}) ==
      R"({"id":"batch_req_0","custom_id":"c","response":{"status_code":200,"request_id":"req_0",)"
      R"("body":{"id":"cmpl-0","object":"text_completion","created":0,"model":"m","choices":[)"
      R"({"index":0,"text":"a","logprobs":null,"finish_reason":"length"},)"
      R"({"index":1,"text":"b\n","logprobs":null,"finish_reason":"stop"}],)"
      R"("usage":{"prompt_tokens":12,"completion_tokens":6,"total_tokens":18,"prompt_tokens_details":{"cached_tokens":8}}}},)"
      R"("error":null})");
  CHECK(format_openai_batch_line(error_record(7, std::nullopt), {}) ==
        R"({"id":"batch_req_7","custom_id":null,"response":{"status_code":400,"request_id":"req_7",)"
        R"("body":{"error":{"message":"prompt must be a string, got a number","type":"invalid_request_error",)"
        R"("param":null,"code":"invalid_type"}}},)"
        R"("error":{"code":"invalid_type","message":"prompt must be a string, got a number"}})");
}

TEST_CASE("output lines of either format are read back for the input line they answer") {
  const RecordContext chat{true, "m"};
  for (RequestFormat format : {RequestFormat::kPlain, RequestFormat::kOpenAiBatch}) {
    CAPTURE(request_format_name(format));
    const auto success =
        read_output_line(format_output_line(format, single(42, "\"x\"", "t", FinishReason::kStop, 1), chat));
    REQUIRE(success);
    CHECK(success->index == 42);
    CHECK_FALSE(success->is_error);
    const auto error =
        read_output_line(format_output_line(format, error_record(18446744073709551615ull, std::nullopt), chat));
    REQUIRE(error);
    CHECK(error->index == 18446744073709551615ull);
    CHECK(error->is_error);
  }
  CHECK_FALSE(read_output_line(R"({"id":"batch_req_12","custom_id":"a","resp)"));  // torn
  CHECK_FALSE(read_output_line(R"({"id":"batch_req_x"})"));
  CHECK_FALSE(read_output_line(R"({"id":"q"})"));
  CHECK_FALSE(read_output_line(""));
  CHECK(openai_batch_line_index("batch_req_0") == 0);
  CHECK(openai_batch_line_index("batch_req_") == std::nullopt);
}

TEST_CASE("a completed line that must wait is handed back (to be journaled); preformatted lines fit in") {
  std::ostringstream out;
  OutputWriter writer(out, format_plain_line);
  for (uint64_t index : {0, 1, 2}) writer.expect(index);
  const std::string* held = writer.complete(single(1, std::nullopt, "one", FinishReason::kStop, 1));
  REQUIRE(held != nullptr);
  CHECK(*held == format_plain_line(single(1, std::nullopt, "one", FinishReason::kStop, 1)));
  CHECK(writer.complete_line(2, "{\"id\":null,\"index\":2,\"from\":\"journal\"}") != nullptr);
  CHECK(writer.complete(single(0, std::nullopt, "zero", FinishReason::kStop, 1)) == nullptr);  // written at once
  CHECK(writer.num_written() == 3);
  CHECK(out.str() == format_plain_line(single(0, std::nullopt, "zero", FinishReason::kStop, 1)) + "\n" +
                         format_plain_line(single(1, std::nullopt, "one", FinishReason::kStop, 1)) + "\n" +
                         "{\"id\":null,\"index\":2,\"from\":\"journal\"}\n");
}

TEST_CASE("log probabilities in each line shape, byte for byte") {
  // Two tokens: "Hi" (id 5, the most likely) and the first byte of "é" (id 7, outside its
  // step's top 2, whose two tokens both read "!", the second at -inf).
  RequestOutput output = single(0, "\"q\"", "Hi\xC3\xA9", FinishReason::kStop, 2);
  output.choices[0].logprobs =
      std::vector<GeneratedTokenLogprobs>{{{5, "Hi", -0.5f}, {{5, "Hi", -0.5f}, {9, " Hello", -1.25f}}, 0},
                                          {{7, "\xC3", -0.25f}, {{8, "!", -0.125f}, {3, "!", -INFINITY}}, 2}};
  CHECK(format_plain_line(output) ==
        R"({"id":"q","index":0,"text":"Hi)"
        "\xC3\xA9"
        R"(","finish_reason":"stop","logprobs":[)"
        R"({"token":"Hi","id":5,"logprob":-0.5,"top_logprobs":[{"token":"Hi","id":5,"logprob":-0.5},)"
        R"({"token":" Hello","id":9,"logprob":-1.25}]},)"
        R"({"token":")"
        "\xEF\xBF\xBD"
        R"(","id":7,"logprob":-0.25,"top_logprobs":[{"token":"!","id":8,"logprob":-0.125},)"
        R"({"token":"!","id":3,"logprob":-9999.0}]}],)"
        R"("usage":{"prompt_tokens":12,"completion_tokens":2,"cached_tokens":8}})");
  const std::string chat = format_openai_batch_line(output, {true, "m"});
  CHECK(
      chat.find(
          R"("content":"Hi)"
          "\xC3\xA9"
          R"("},"logprobs":{"content":[)"
          R"({"token":"Hi","logprob":-0.5,"bytes":[72,105],"top_logprobs":[{"token":"Hi","logprob":-0.5,"bytes":[72,105]},)"
          R"({"token":" Hello","logprob":-1.25,"bytes":[32,72,101,108,108,111]}]},)"
          R"({"token":")"
          "\xEF\xBF\xBD"
          R"(","logprob":-0.25,"bytes":[195],"top_logprobs":[)"
          R"({"token":"!","logprob":-0.125,"bytes":[33]},{"token":"!","logprob":-9999.0,"bytes":[33]}]}]},)"
          R"("finish_reason":"stop"})") != std::string::npos);
  // Completions: each top_logprobs object has the top tokens and the generated one when it
  // is not among them; a repeated text is left out.
  const std::string completion = format_openai_batch_line(output, {false, "m"});
  CHECK(completion.find(R"("text":"Hi)"
                        "\xC3\xA9"
                        R"(","logprobs":{"tokens":["Hi",")"
                        "\xEF\xBF\xBD"
                        R"("],)"
                        R"("token_logprobs":[-0.5,-0.25],"top_logprobs":[{"Hi":-0.5," Hello":-1.25},)"
                        R"({"!":-0.125,")"
                        "\xEF\xBF\xBD"
                        R"(":-0.25}],"text_offset":[0,2]},"finish_reason":"stop"})") != std::string::npos);
  // n > 1 in the plain format: each choice carries its own.
  output.choices.push_back(
      Completion{"!", FinishReason::kLength, 1, {8}, std::vector<GeneratedTokenLogprobs>{{{8, "!", -0.125f}, {}, 0}}});
  CHECK(format_plain_line(output).find(R"({"index":1,"text":"!","finish_reason":"length","logprobs":[)"
                                       R"({"token":"!","id":8,"logprob":-0.125,"top_logprobs":[]}]}],)") !=
        std::string::npos);
}
