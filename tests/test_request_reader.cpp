// LineReader and RequestReader: line splitting (CRLF, no final newline, long lines, chunk
// boundaries), and the exact Request / RequestError sequence for files mixing good lines,
// malformed JSON, missing and wrong-typed fields, out-of-range values and blank lines.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "io/line_reader.h"
#include "io/request_reader.h"
#include "util/error.h"

using namespace pagedgen;

namespace {

std::vector<std::string> split_lines(const std::string& input,
                                     std::size_t max_line_bytes = LineReader::kDefaultMaxLineBytes) {
  std::istringstream stream(input);
  LineReader reader(stream, max_line_bytes);
  std::vector<std::string> lines;
  while (std::optional<Line> line = reader.next()) {
    REQUIRE(line->number == lines.size());
    lines.push_back(line->too_long ? fmt::format("TOO LONG {} [{}]", line->num_bytes, line->text) : line->text);
  }
  return lines;
}

std::string describe_sampling(const SamplingParams& p) {
  std::string stop;
  for (const std::string& s : p.stop) stop += fmt::format("'{}'", s);
  std::string ids;
  for (TokenId id : p.stop_token_ids) ids += fmt::format("{},", id);
  return fmt::format("T={} k={} p={} minp={} seed={} stop=[{}] ids=[{}] max={} min={} ignore_eos={} n={}",
                     p.temperature, p.top_k, p.top_p, p.min_p, p.seed ? fmt::format("{}", *p.seed) : "none", stop, ids,
                     p.max_tokens, p.min_tokens, p.ignore_eos, p.n);
}

// The conversation as [role|content]..., text parts joined, a null content as "null".
std::string describe_messages(const std::string& messages_json) {
  simdjson::dom::parser parser;
  std::string out;
  for (simdjson::dom::element message : simdjson::dom::array(parser.parse(messages_json).value())) {
    const simdjson::dom::element content = message["content"].value();
    std::string text = content.is_null() ? "null" : "";
    if (content.is_string()) text = std::string(content.get_string().value());
    if (content.is_array())
      for (simdjson::dom::element part : simdjson::dom::array(content)) text += std::string_view(part["text"]);
    out += fmt::format("[{}|{}]", std::string_view(message["role"]), text);
  }
  return out;
}

// One line per item, so a whole file's result compares as one vector of strings.
std::string describe_item(const RequestItem& item) {
  if (const auto* error = std::get_if<RequestError>(&item))
    return fmt::format("E {} id={} {}: {}", error->index, error->id_json.value_or("null"), error->code, error->message);
  const Request& request = std::get<Request>(item);
  std::string input;
  if (request.is_chat()) {
    input = describe_messages(request.chat().messages_json);
  } else {
    input = fmt::format("'{}'", request.prompt());
  }
  return fmt::format("R {} id={} key={} {}", request.index, request.id_json.value_or("null"), request.seed_key, input);
}

SamplingParams defaults() {
  SamplingParams params;
  params.temperature = 0.5;
  params.max_tokens = 32;
  return params;
}

std::vector<RequestItem> read_all(const std::string& input, const SamplingParams& params = defaults(),
                                  std::size_t max_line_bytes = LineReader::kDefaultMaxLineBytes) {
  std::istringstream stream(input);
  RequestReader reader(stream, params, RequestFormat::kPlain, max_line_bytes);
  std::vector<RequestItem> items;
  while (std::optional<RequestItem> item = reader.next()) items.push_back(std::move(*item));
  return items;
}

// All items, one per line (a single string so that doctest prints it on failure).
std::string describe_all(const std::vector<RequestItem>& items) {
  std::string out;
  for (const RequestItem& item : items) out += describe_item(item) + "\n";
  return out;
}

// The single item of a one-line input.
std::string parse_one(const std::string& line) {
  const std::vector<RequestItem> items = read_all(line);
  REQUIRE(items.size() == 1);
  return describe_item(items.front());
}

const Request& as_request(const RequestItem& item) {
  REQUIRE(std::holds_alternative<Request>(item));
  return std::get<Request>(item);
}

}  // namespace

TEST_CASE("LineReader splits on LF and CRLF and keeps a last line without newline") {
  CHECK(split_lines("").empty());
  CHECK(split_lines("\n") == std::vector<std::string>{""});
  CHECK(split_lines("a") == std::vector<std::string>{"a"});
  CHECK(split_lines("a\n") == std::vector<std::string>{"a"});
  CHECK(split_lines("a\nb") == std::vector<std::string>{"a", "b"});
  CHECK(split_lines("a\r\nb\r\n\r\nc") == std::vector<std::string>{"a", "b", "", "c"});
  CHECK(split_lines("a\r") == std::vector<std::string>{"a"});
  CHECK(split_lines("x\ry\n") == std::vector<std::string>{"x\ry"});  // a CR inside a line stays
}

TEST_CASE("LineReader handles lines longer than its read chunk and CRLF split across chunks") {
  const std::string long_line(300000, 'x');
  CHECK(split_lines(long_line + "\n" + "tail") == std::vector<std::string>{long_line, "tail"});
  CHECK(split_lines(long_line) == std::vector<std::string>{long_line});
  // The read chunk is 65536 bytes: here '\r' ends the first chunk and '\n' starts the next.
  const std::string before_crlf(65535, 'y');
  CHECK(split_lines(before_crlf + "\r\nz") == std::vector<std::string>{before_crlf, "z"});
}

TEST_CASE("LineReader reports lines over the limit without keeping them whole") {
  const std::vector<std::string> lines =
      split_lines("0123456789\n0123456789\r\n01234567890\nok\n012345678901234\r\n", 10);
  CHECK(lines == std::vector<std::string>{"0123456789", "0123456789", "TOO LONG 11 [0123456789]", "ok",
                                          "TOO LONG 15 [0123456789]"});
}

TEST_CASE("a file of good and bad lines gives exactly one item per non-blank line, in order") {
  const std::string input =
      "{\"id\": \"a\", \"prompt\": \"Hello\"}\r\n"  // 0
      "\r\n"                                        // 1 blank
      "{\"prompt\": \"x\", \"temperature\": -1}\n"  // 2
      "{\"id\": 7, \"prompt\": 5}\n"                // 3
      "{\"id\": \"broken\", \"prompt\": \"x\"\n"    // 4
      "{\"id\": \"m\", \"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, "
      "{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"Hi \"}, "
      "{\"type\": \"text\", \"text\": \"there\"}]}], \"max_tokens\": 5, \"stop\": \"x\"}\n"  // 5
      "   \t  \n"                                                                            // 6 blank
      "{\"id\": \"q\", \"max_tokens\": 3}\n"                                                 // 7
      "{\"prompt\": \"p\", \"messages\": [{\"role\": \"user\", \"content\": \"c\"}]}\n"      // 8
      "{\"prompt\": \"p\", \"max_tokens\": \"5\"}\n"                                         // 9
      "{\"prompt\": \"p\", \"n\": 2, \"seed\": 99, \"top_k\": -1, \"stop\": [\"a\", \"b\"], "
      "\"stop_token_ids\": [1, 2], \"extra\": {\"x\": [1, 2]}, \"temperature\": null}\n"  // 10
      "{\"prompt\": \"\xff\"}\n"                                                          // 11
      "\n"                                                                                // 12 blank
      "{\"id\": 1.5e3, \"prompt\": \"last\"}";                                            // 13, no newline

  std::istringstream stream(input);
  RequestReader reader(stream, defaults());
  std::vector<RequestItem> items;
  while (std::optional<RequestItem> item = reader.next()) items.push_back(std::move(*item));
  CHECK(reader.num_lines() == 14);
  CHECK(reader.num_blank_lines() == 3);

  const std::string expected =
      "R 0 id=\"a\" key=a 'Hello'\n"
      "E 2 id=null invalid_value: temperature must be >= 0 and finite, got -1\n"
      "E 3 id=7 invalid_type: prompt must be a string, got a number\n"
      "E 4 id=null invalid_json: the line is not valid JSON: unbalanced braces or brackets, or content after the "
      "object\n"
      "R 5 id=\"m\" key=m [system|Be brief.][user|Hi there]\n"
      "E 7 id=\"q\" missing_field: the line needs \"prompt\" (text) or \"messages\" (a chat conversation)\n"
      "E 8 id=null conflicting_fields: the line gives both prompt and messages; give exactly one\n"
      "E 9 id=null invalid_type: max_tokens must be an integer, got a string\n"
      "R 10 id=null key=#10 'p'\n"
      "E 11 id=null invalid_utf8: the line is not valid UTF-8; re-encode the input file as UTF-8\n"
      "R 13 id=1.5e3 key=1.5e3 'last'\n";
  CHECK(describe_all(items) == expected);

  CHECK(describe_sampling(as_request(items[0]).sampling) ==
        "T=0.5 k=0 p=1 minp=0 seed=none stop=[] ids=[] max=32 min=0 ignore_eos=false n=1");
  CHECK(describe_sampling(as_request(items[4]).sampling) ==
        "T=0.5 k=0 p=1 minp=0 seed=none stop=['x'] ids=[] max=5 min=0 ignore_eos=false n=1");
  CHECK(describe_sampling(as_request(items[8]).sampling) ==
        "T=0.5 k=0 p=1 minp=0 seed=99 stop=['a''b'] ids=[1,2,] max=32 min=0 ignore_eos=false n=2");
}

TEST_CASE("every sampling field is read and overrides the defaults") {
  const std::vector<RequestItem> items = read_all(
      "{\"prompt\": \"p\", \"temperature\": 0, \"top_p\": 0.9, \"top_k\": 40, \"min_p\": 0.05, "
      "\"seed\": 18446744073709551615, \"stop\": [], \"stop_token_ids\": [], \"max_tokens\": 100, "
      "\"min_tokens\": 100, \"ignore_eos\": true, \"n\": 128}");
  REQUIRE(items.size() == 1);
  CHECK(describe_sampling(as_request(items[0]).sampling) ==
        "T=0 k=40 p=0.9 minp=0.05 seed=18446744073709551615 stop=[] ids=[] max=100 min=100 ignore_eos=true n=128");
}

TEST_CASE("malformed JSON anywhere in the line is invalid_json") {
  CHECK(parse_one("{\"prompt\": \"a\", \"x\": [1,]}") ==
        "E 0 id=null invalid_json: the line is not valid JSON: misplaced or missing comma, colon, brace or bracket "
        "(near byte 24)");
  CHECK(parse_one("{\"prompt\": \"a\", \"x\": tru}") ==
        "E 0 id=null invalid_json: the line is not valid JSON: bad literal (expected true) (near byte 21)");
  CHECK(parse_one("{\"prompt\": \"a\"}}") ==
        "E 0 id=null invalid_json: the line is not valid JSON: content after the object (near byte 15)");
  CHECK(parse_one("{\"prompt\": \"a\"} x") ==
        "E 0 id=null invalid_json: the line is not valid JSON: unbalanced braces or brackets, or content after the "
        "object");
  CHECK(parse_one("{\"prompt\": \"a\\q\"}") ==
        "E 0 id=null invalid_json: the line is not valid JSON: bad escape or control character in a string (near byte "
        "16)");
  CHECK(parse_one("{\"prompt\": \"a\", \"max_tokens\": 01}") ==
        "E 0 id=null invalid_json: the line is not valid JSON: malformed or out-of-range number (near byte 30)");
  CHECK(parse_one("prompt: a") ==
        "E 0 id=null invalid_json: the line is not valid JSON: misplaced or missing comma, colon, brace or bracket");
  // Lines whose first byte looks like a scalar are judged whole, not by that byte.
  CHECK(parse_one("not json") == "E 0 id=null invalid_json: the line is not valid JSON: bad literal (expected null)");
  CHECK(parse_one("true story") ==
        "E 0 id=null invalid_json: the line is not valid JSON: misplaced or missing comma, colon, brace or bracket");
  CHECK(parse_one("12 monkeys").starts_with("E 0 id=null invalid_json: the line is not valid JSON: "));
  CHECK(parse_one("[1, 2") ==
        "E 0 id=null invalid_json: the line is not valid JSON: misplaced or missing comma, colon, brace or bracket");
}

TEST_CASE("the line must be one object with prompt or messages") {
  CHECK(parse_one("[1, 2]") ==
        "E 0 id=null invalid_type: a request line must be a JSON object {\"prompt\": ...} or {\"messages\": ...}, got "
        "a list");
  CHECK(parse_one("\"Hello\"") ==
        "E 0 id=null invalid_type: a request line must be a JSON object {\"prompt\": ...} or {\"messages\": ...}, got "
        "a string");
  CHECK(parse_one("{}") ==
        "E 0 id=null missing_field: the line needs \"prompt\" (text) or \"messages\" (a chat conversation)");
  CHECK(parse_one("{\"prompt\": \"a\", \"prompt\": \"b\"}") ==
        "E 0 id=null duplicate_field: field \"prompt\" appears twice");
  CHECK(parse_one("{\"prompt\": \"\"}") ==
        "E 0 id=null invalid_value: prompt must be a non-empty string or list of token ids, got \"\"");
  CHECK(parse_one("{\"prompt\": null, \"messages\": [{\"role\": \"user\", \"content\": \"c\"}]}") ==
        "R 0 id=null key=#0 [user|c]");
}

TEST_CASE("ids: strings and numbers kept as written, other types rejected") {
  CHECK(parse_one("{\"id\": \"a\\\"b\\u00e9\", \"prompt\": \"x\"}") == "R 0 id=\"a\\\"b\\u00e9\" key=a\"b\xC3\xA9 'x'");
  CHECK(parse_one("{\"prompt\": \"x\", \"id\": -12}") == "R 0 id=-12 key=-12 'x'");
  CHECK(parse_one("{\"prompt\": \"x\", \"id\": null}") == "R 0 id=null key=#0 'x'");
  CHECK(parse_one("{\"id\": {\"a\": 1}, \"prompt\": \"x\"}") ==
        "E 0 id=null invalid_type: id must be a string, a number or null, got an object");
  CHECK(parse_one("{\"id\": [1, tru], \"prompt\": \"x\"}") ==
        "E 0 id=null invalid_json: the line is not valid JSON: bad literal (expected true) (near byte 11)");
  // 64-bit integers and other numbers stay as written; an integer beyond 64 bits (which
  // the output's readers, --resume among them, cannot hold) is refused.
  CHECK(parse_one("{\"prompt\": \"x\", \"id\": 18446744073709551615}") ==
        "R 0 id=18446744073709551615 key=18446744073709551615 'x'");
  CHECK(parse_one("{\"prompt\": \"x\", \"id\": 1.5e300}") == "R 0 id=1.5e300 key=1.5e300 'x'");
  CHECK(parse_one("{\"prompt\": \"x\", \"id\": 18446744073709551616}") ==
        "E 0 id=null invalid_value: id 18446744073709551616 is an integer beyond 64 bits, which JSON readers "
        "cannot hold exactly; give it as a string");
  CHECK(parse_one("{\"prompt\": \"x\", \"id\": -9223372036854775809}")
            .starts_with("E 0 id=null invalid_value: id -9223372036854775809 is an integer beyond 64 bits"));
  // The id is read before the field that fails, wherever it stands in the line.
  CHECK(parse_one("{\"top_p\": 2, \"prompt\": \"x\", \"id\": \"late\"}") ==
        "E 0 id=\"late\" invalid_value: top_p must be in (0, 1] (1 = off), got 2");
}

TEST_CASE("messages: shapes and errors") {
  CHECK(parse_one("{\"messages\": []}") == "E 0 id=null invalid_value: messages must hold at least one message");
  CHECK(parse_one("{\"messages\": {\"role\": \"user\"}}") ==
        "E 0 id=null invalid_type: messages must be a list of {\"role\", \"content\"} objects, got an object");
  CHECK(parse_one("{\"messages\": [\"hi\"]}") ==
        "E 0 id=null invalid_type: messages[0] must be an object with \"role\" and \"content\", got a string");
  CHECK(parse_one("{\"messages\": [{\"content\": \"hi\"}]}") ==
        "E 0 id=null missing_field: messages[0].role is missing");
  CHECK(parse_one("{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"user\"}]}") ==
        "E 0 id=null missing_field: messages[1].content is missing");
  CHECK(parse_one("{\"messages\": [{\"role\": \"user\", \"content\": 3}]}") ==
        "E 0 id=null invalid_type: messages[0].content must be a string, null or a list of {\"type\": \"text\", "
        "\"text\": "
        "...} parts, got a number");
  CHECK(parse_one(
            "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": {}}]}]}") ==
        "E 0 id=null invalid_value: messages[0].content[0].type must be \"text\" (only text parts are supported), got "
        "\"image_url\"");
  CHECK(parse_one("{\"messages\": [{\"role\": \"\", \"content\": \"a\"}]}") ==
        "E 0 id=null invalid_value: messages[0].role must be a role such as \"system\", \"user\" or \"assistant\", got "
        "\"\"");
  CHECK(parse_one("{\"messages\": [{\"role\": \"user\", \"content\": \"a\", \"name\": \"bob\"}]}") ==
        "R 0 id=null key=#0 [user|a]");
}

TEST_CASE("sampling fields: wrong types and out-of-range values name the field") {
  const auto with = [](const std::string& fields) { return parse_one("{\"prompt\": \"p\", " + fields + "}"); };
  CHECK(with("\"temperature\": \"hot\"") == "E 0 id=null invalid_type: temperature must be a number, got a string");
  CHECK(with("\"top_p\": 0") == "E 0 id=null invalid_value: top_p must be in (0, 1] (1 = off), got 0");
  CHECK(with("\"min_p\": 1.5") == "E 0 id=null invalid_value: min_p must be in [0, 1] (0 = off), got 1.5");
  CHECK(with("\"top_k\": -2") == "E 0 id=null invalid_value: top_k must be >= 0 (0 = off), got -2");
  CHECK(with("\"max_tokens\": 0") ==
        "E 0 id=null invalid_value: max_tokens must be >= 1 (0 only with echo or prompt_logprobs: score the prompt, "
        "generate nothing), got 0");
  CHECK(with("\"max_tokens\": 5.0") == "E 0 id=null invalid_type: max_tokens must be an integer, got 5.0");
  CHECK(with("\"max_tokens\": 99999999999") ==
        "E 0 id=null invalid_value: max_tokens must be an integer in [-2147483648, 2147483647], got 99999999999");
  CHECK(with("\"min_tokens\": 40") == "E 0 id=null invalid_value: min_tokens must be <= max_tokens (32), got 40");
  CHECK(with("\"n\": 0") == "E 0 id=null invalid_value: n must be in [1, 128], got 0");
  CHECK(with("\"n\": 129") == "E 0 id=null invalid_value: n must be in [1, 128], got 129");
  CHECK(with("\"seed\": -1") ==
        "E 0 id=null invalid_value: seed must be an integer in [0, 18446744073709551615], got -1");
  CHECK(with("\"seed\": 18446744073709551616") ==
        "E 0 id=null invalid_value: seed must be an integer in [0, 18446744073709551615], got 18446744073709551616");
  CHECK(with("\"stop\": \"\"") == "E 0 id=null invalid_value: stop[0] must be a non-empty string, got \"\"");
  CHECK(with("\"stop\": [\"a\", 1]") == "E 0 id=null invalid_type: stop[1] must be a string, got a number");
  CHECK(with("\"stop\": {}") == "E 0 id=null invalid_type: stop must be a string or a list of strings, got an object");
  CHECK(with("\"stop_token_ids\": [3, -1]") ==
        "E 0 id=null invalid_value: stop_token_ids[1] must be a token id >= 0, got -1");
  CHECK(with("\"stop_token_ids\": 3") ==
        "E 0 id=null invalid_type: stop_token_ids must be a list of token ids, got a number");
  CHECK(with("\"ignore_eos\": \"yes\"") == "E 0 id=null invalid_type: ignore_eos must be true or false, got a string");
  CHECK(with("\"user\": \"u\", \"metadata\": {\"k\": [null]}") == "R 0 id=null key=#0 'p'");  // unknown keys ignored
}

TEST_CASE("over-long lines, a byte-order mark, and invalid defaults") {
  const std::vector<RequestItem> items =
      read_all("{\"prompt\": \"a long prompt\"}\n{\"prompt\": \"ok\"}\n", defaults(), 20);
  CHECK(describe_all(items) ==
        "E 0 id=null line_too_long: the line is 27 bytes, over the limit of 20 bytes\n"
        "R 1 id=null key=#1 'ok'\n");
  CHECK(describe_all(read_all("\xEF\xBB\xBF{\"prompt\": \"bom\"}\n")) == "R 0 id=null key=#0 'bom'\n");

  SamplingParams bad = defaults();
  bad.top_p = 0.0;
  std::istringstream stream("");
  CHECK_THROWS_WITH_AS(RequestReader(stream, bad), "top_p must be in (0, 1] (1 = off), got 0", Error);
}

namespace {

// The items of an input read with `format` (nullopt: detected), and the format in use.
std::pair<std::string, std::optional<RequestFormat>> read_format(const std::string& input,
                                                                 std::optional<RequestFormat> format) {
  std::istringstream stream(input);
  RequestReader reader(stream, defaults(), format);
  std::vector<RequestItem> items;
  while (std::optional<RequestItem> item = reader.next()) items.push_back(std::move(*item));
  return {describe_all(items), reader.format()};
}

std::string batch_line(const std::string& url, const std::string& body) {
  return fmt::format(R"({{"custom_id": "r", "method": "POST", "url": "{}", "body": {{{}}}}})", url, body);
}

// The single item of a one-line OpenAI batch input.
std::string parse_batch(const std::string& line) { return read_format(line, RequestFormat::kOpenAiBatch).first; }

}  // namespace

TEST_CASE("OpenAI batch lines: the documented examples, detected from the first non-blank line") {
  const std::string input =
      "\n"
      R"({"custom_id": "request-1", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "gpt-3.5-turbo-0125", "messages": [{"role": "system", "content": "You are a helpful assistant."},{"role": "user", "content": "Hello world!"}],"max_tokens": 1000}})"
      "\n"
      R"({"custom_id": "request-2", "method": "POST", "url": "/v1/completions", "body": {"model": "gpt-3.5-turbo-instruct", "prompt": "Say this is a test", "max_tokens": 7, "temperature": 0}})"
      "\n"
      R"({"id": "plain", "prompt": "a plain line"})"
      "\n";
  const auto [items, format] = read_format(input, std::nullopt);
  CHECK(format == RequestFormat::kOpenAiBatch);
  CHECK(items ==
        "R 1 id=\"request-1\" key=request-1 [system|You are a helpful assistant.][user|Hello world!]\n"
        "R 2 id=\"request-2\" key=request-2 'Say this is a test'\n"
        "E 3 id=null wrong_format: the line is in the plain format (prompt or messages at the top level), but this "
        "input is in the OpenAI batch format (the line format: detected from its first line that is a JSON object, "
        "or set for the run)\n");

  std::istringstream stream(input);
  RequestReader reader(stream, defaults(), std::nullopt);
  reader.next();
  const Request request = as_request(*reader.next());
  CHECK(request.model == "gpt-3.5-turbo-instruct");
  CHECK(describe_sampling(request.sampling) ==
        "T=0 k=0 p=1 minp=0 seed=none stop=[] ids=[] max=7 min=0 ignore_eos=false n=1");

  // A plain file with an OpenAI line in it: that line is an error line.
  const auto [plain_items, plain_format] =
      read_format("{\"prompt\": \"a\"}\n" + batch_line("/v1/completions", R"("prompt": "b")") + "\n", std::nullopt);
  CHECK(plain_format == RequestFormat::kPlain);
  CHECK(plain_items ==
        "R 0 id=null key=#0 'a'\n"
        "E 1 id=null wrong_format: the line is in the OpenAI batch format (custom_id, body), but this "
        "input is in the plain format (the line format: detected from its first line that is a "
        "JSON object, or set for the run)\n");
}

TEST_CASE("a first line that is no JSON object is an error line; the format comes from the first that is") {
  const std::string openai = batch_line("/v1/completions", R"("prompt": "b")");
  const auto [items, format] = read_format("not json\n[1, 2]\n" + openai + "\n" + openai + "\n", std::nullopt);
  CHECK(format == RequestFormat::kOpenAiBatch);
  CHECK(items ==
        "E 0 id=null invalid_json: the line is not valid JSON: bad literal (expected null)\n"
        "E 1 id=null invalid_type: a request line must be a JSON object {\"prompt\": ...} or "
        "{\"messages\": ...}, got a list\n"
        "R 2 id=\"r\" key=r 'b'\n"
        "R 3 id=\"r\" key=r 'b'\n");
  // Nothing but errors: the format stays undetected.
  CHECK_FALSE(read_format("not json\n", std::nullopt).second.has_value());
}

TEST_CASE("OpenAI batch lines: sampling fields of the body, and every error") {
  const auto sampling_of = [](const std::string& body) {
    std::istringstream stream(batch_line("/v1/completions", R"("prompt": "p", )" + body));
    RequestReader reader(stream, defaults(), RequestFormat::kOpenAiBatch);
    return describe_sampling(as_request(*reader.next()).sampling);
  };
  CHECK(sampling_of(R"("max_completion_tokens": 9, "top_p": 0.5, "n": 3, "seed": 4, "stop": "x", "stream": false, )"
                    R"("logprobs": null, "presence_penalty": 0, "best_of": 1, "logit_bias": {}, "user": "u")") ==
        "T=0.5 k=0 p=0.5 minp=0 seed=4 stop=['x'] ids=[] max=9 min=0 ignore_eos=false n=3");

  CHECK(parse_batch(R"({"method": "POST", "url": "/v1/completions", "body": {"prompt": "p"}})") ==
        "E 0 id=null missing_field: custom_id is missing: every line needs a string custom_id\n");
  CHECK(parse_batch(R"({"custom_id": 5, "method": "POST", "url": "/v1/completions", "body": {"prompt": "p"}})") ==
        "E 0 id=null invalid_type: custom_id must be a string or null, got a number\n");
  CHECK(parse_batch(R"({"custom_id": "r", "method": "GET", "url": "/v1/completions", "body": {"prompt": "p"}})") ==
        "E 0 id=\"r\" invalid_value: method must be \"POST\", got \"GET\"\n");
  CHECK(parse_batch(batch_line("/v1/embeddings", R"("input": "p")")) ==
        "E 0 id=\"r\" invalid_value: url must be \"/v1/chat/completions\" or \"/v1/completions\", got "
        "\"/v1/embeddings\"\n");
  CHECK(parse_batch(R"({"custom_id": "r", "method": "POST", "url": "/v1/completions"})") ==
        "E 0 id=\"r\" missing_field: body is missing: give the request's parameters\n");
  CHECK(parse_batch(batch_line("/v1/chat/completions", R"("prompt": "p")")) ==
        "E 0 id=\"r\" conflicting_fields: body.prompt is for /v1/completions; a /v1/chat/completions body gives "
        "messages\n");
  CHECK(parse_batch(batch_line("/v1/completions", R"("messages": [{"role": "user", "content": "c"}])")) ==
        "E 0 id=\"r\" conflicting_fields: body.messages is for /v1/chat/completions; a /v1/completions body gives "
        "prompt\n");
  CHECK(parse_batch(batch_line("/v1/chat/completions", R"("model": "m")")) ==
        "E 0 id=\"r\" missing_field: body.messages is missing: /v1/chat/completions needs a conversation\n");
  CHECK(parse_batch(batch_line("/v1/completions", R"("prompt": ["a", "b"])")) ==
        "E 0 id=\"r\" invalid_type: body.prompt[0] must be a token id (one prompt per line: lists of prompts are not "
        "supported), got a string\n");
  CHECK(parse_batch(batch_line("/v1/completions", R"("prompt": "p", "max_tokens": 5, "max_completion_tokens": 5)")) ==
        "E 0 id=\"r\" conflicting_fields: the body gives both max_tokens and max_completion_tokens; give one\n");
  CHECK(parse_batch(batch_line("/v1/completions", R"("prompt": "p", "stream": true)")) ==
        "E 0 id=\"r\" unsupported_field: body.stream is not supported by pagedgen (responses are written whole, one "
        "output line per request); remove it or give its default\n");
  CHECK(parse_batch(batch_line("/v1/completions", R"("prompt": "p", "best_of": 2)")) ==
        "E 0 id=\"r\" unsupported_field: body.best_of is not supported by pagedgen (best-of ranking is not "
        "implemented; ask for n samples instead); remove it or give its default\n");
  CHECK(parse_batch(batch_line("/v1/completions", R"("prompt": "p", "temperature": -1)")) ==
        "E 0 id=\"r\" invalid_value: temperature must be >= 0 and finite, got -1\n");
  CHECK(parse_batch(batch_line("/v1/completions", R"("prompt": "p", "model": 3)")) ==
        "E 0 id=\"r\" invalid_type: body.model must be a string, got a number\n");
  CHECK(parse_batch(R"({"custom_id": "r", "body": {"prompt": "p"}, "body": {}})") ==
        "E 0 id=null duplicate_field: field \"body\" appears twice\n");
}

TEST_CASE("a line selection skips lines unparsed and is what count_selected_requests counts") {
  const std::string input = "{\"prompt\": \"0\"}\n\n{\"prompt\": \"2\"}\nprompt: a\n{\"prompt\": \"4\"}\n \n";
  const LineSelection odd_windows = [](uint64_t line) { return line / 2 % 2 == 1; };  // lines 2, 3, 6, 7, ...
  std::istringstream stream(input);
  RequestReader reader(stream, defaults(), RequestFormat::kPlain, LineReader::kDefaultMaxLineBytes, odd_windows);
  std::vector<RequestItem> items;
  while (std::optional<RequestItem> item = reader.next()) items.push_back(std::move(*item));
  CHECK(describe_all(items) ==
        "R 2 id=null key=#2 '2'\n"
        "E 3 id=null invalid_json: the line is not valid JSON: misplaced or missing comma, colon, brace or bracket\n");
  CHECK(reader.num_lines() == 2);
  CHECK(reader.num_blank_lines() == 0);
  std::istringstream counted(input);
  CHECK(count_selected_requests(counted, odd_windows) == 2);
  std::istringstream all(input);
  CHECK(count_selected_requests(all, {}) == 4);
}

// simdjson rejects these before any value is read; asking that unstarted document where it
// stopped crashed (SIGSEGV) instead of giving the line its error.
TEST_CASE("a raw control character or an unclosed string is invalid_json, in both formats") {
  const std::string control =
      "{\"prompt\": \"a\x01"
      "b\"}";
  const std::string unclosed = "{\"prompt\": \"abc";
  CHECK(parse_one(control) ==
        "E 0 id=null invalid_json: the line is not valid JSON: a control character (0x00-0x1F) in a string must be "
        "escaped, e.g. \\n or \\u0001 (near byte 13)");
  CHECK(parse_one(unclosed) ==
        "E 0 id=null invalid_json: the line is not valid JSON: a string is never closed (near byte 11)");
  CHECK(parse_one(std::string("{\"prompt\": \"a\0b\"}", 17))
            .starts_with("E 0 id=null invalid_json: the line is not valid JSON: a control character"));
  CHECK(parse_one("{\"prompt\": \"a\\\"\tb\"}").ends_with("(near byte 15)"));  // after an escaped quote
  CHECK(parse_one("{\"prompt\": \"a\", \"x\": \"\\\\") ==
        "E 0 id=null invalid_json: the line is not valid JSON: a string is never closed (near byte 21)");

  for (const std::optional<RequestFormat> format :
       {std::optional<RequestFormat>(RequestFormat::kPlain), std::optional<RequestFormat>(RequestFormat::kOpenAiBatch),
        std::optional<RequestFormat>()}) {
    CAPTURE(format.has_value());
    for (const std::string& bad : {control, unclosed}) {
      const std::string good = format == RequestFormat::kOpenAiBatch ? batch_line("/v1/completions", R"("prompt": "p")")
                                                                     : std::string(R"({"prompt": "p"})");
      const std::string items = read_format(good + "\n" + bad + "\n" + good + "\n", format).first;
      const std::string key = format == RequestFormat::kOpenAiBatch ? "id=\"r\" key=r" : "id=null key=#";
      CHECK(items.starts_with("R 0 "));
      CHECK(items.find("\nE 1 id=null invalid_json: the line is not valid JSON: ") != std::string::npos);
      CHECK(items.find("\nR 2 ") != std::string::npos);
      CHECK(std::count(items.begin(), items.end(), '\n') == 3);
    }
  }
}

// Validating a value used to recurse once per level, so ~25,000 levels overflowed the stack
// (SIGSEGV).
TEST_CASE("nesting past kMaxNestingLevels is invalid_json, not a stack overflow") {
  const auto nested = [](std::size_t levels, char open, char close) {
    std::string text;
    for (std::size_t i = 0; i < levels; ++i) text += open == '{' ? "{\"k\":" : "[";
    text += "1";
    for (std::size_t i = 0; i < levels; ++i) text += close;
    return text;
  };
  for (const char open : {'[', '{'}) {
    const char close = open == '[' ? ']' : '}';
    CAPTURE(open);
    // The line's object is level 1, "x"'s value level 2: 126 more levels fit the limit.
    CHECK(parse_one("{\"prompt\": \"a\", \"x\": " + nested(127, open, close) + "}") == "R 0 id=null key=#0 'a'");
    CHECK(parse_one("{\"prompt\": \"a\", \"x\": " + nested(128, open, close) + "}")
              .starts_with("E 0 id=null invalid_json: the line nests objects and lists deeper than 128 levels, which "
                           "pagedgen does not read (near byte "));
    CHECK(parse_one("{\"prompt\": \"a\", \"x\": " + nested(25000, open, close) + "}")
              .starts_with("E 0 id=null invalid_json: the line nests objects and lists deeper than 128 levels, which "
                           "pagedgen does not read"));
    CHECK(parse_batch(batch_line("/v1/completions", "\"prompt\": \"p\", \"x\": " + nested(25000, open, close)))
              .starts_with("E 0 id=null invalid_json: the line nests objects and lists deeper than 128 levels, which "
                           "pagedgen does not read"));
    // Unbalanced too: the depth limit or the syntax error, never a crash.
    CHECK(
        parse_one("{\"prompt\": \"a\", \"x\": " + std::string(25000, open)).starts_with("E 0 id=null invalid_json: "));
    CHECK(parse_one(nested(25000, open, close)).starts_with("E 0 id=null invalid_"));
  }
}

TEST_CASE("a line of 1,000,000 keys is read in linear time; a key given twice among them is still found") {
  std::string line = R"({"prompt": "p")";
  for (int i = 0; i < 1000000; ++i) line += fmt::format(R"(, "k{}": {})", i, i);
  CHECK(read_format(line + "}\n", RequestFormat::kPlain).first == "R 0 id=null key=#0 'p'\n");
  CHECK(read_format(line + R"(, "k999999": 0})" + "\n", RequestFormat::kPlain).first ==
        "E 0 id=null duplicate_field: field \"k999999\" appears twice\n");
}
