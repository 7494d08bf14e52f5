// The output of prompt log probabilities, byte for byte on a hand-made record: the plain
// line's top-level prompt_logprobs, vLLM's prompt_logprobs maps (in the choice for
// completions, at the response level for chat) and the completions echo (the prompt's
// text, tokens and values first, null for the first token, offsets after the prompt's).
#include <doctest/doctest.h>

#include <string>

#include "io/openai_batch_output.h"
#include "io/plain_output.h"

using namespace pagedgen;

namespace {

// Prompt "Hi there!" as [10 "Hi", 11 " there", 12 "!"], then " Bye" generated.
std::vector<GeneratedTokenLogprobs> prompt_entries(std::size_t num_top) {
  std::vector<GeneratedTokenLogprobs> entries = {
      {{10, "Hi", 0.0f}, {}, 0, 1},
      {{11, " there", -1.5f}, {{13, " you", -0.5f}, {11, " there", -1.5f}}, 2, 2},
      {{12, "!", -0.25f}, {{12, "!", -0.25f}, {14, ".", -2.0f}}, 8, 1},
  };
  for (GeneratedTokenLogprobs& e : entries) e.top.resize(std::min(e.top.size(), num_top));
  return entries;
}

RequestOutput record() {
  RequestOutput output;
  output.index = 0;
  output.id_json = "\"q\"";
  Completion choice{" Bye", FinishReason::kLength, 1, {15}, std::nullopt};
  choice.logprobs = std::vector<GeneratedTokenLogprobs>{{{15, " Bye", -0.75f}, {{15, " Bye", -0.75f}}, 0, 1}};
  output.choices = {choice};
  output.prompt_tokens = 3;
  output.prompt_logprobs = prompt_entries(2);
  return output;
}

}  // namespace

TEST_CASE("plain lines: prompt_logprobs beside the text, null for the first token") {
  CHECK(format_plain_line(record()) ==
        R"({"id":"q","index":0,"text":" Bye","finish_reason":"length","logprobs":[{"token":" Bye","id":15,)"
        R"("logprob":-0.75,"top_logprobs":[{"token":" Bye","id":15,"logprob":-0.75}]}],"prompt_logprobs":[null,)"
        R"({"token":" there","id":11,"logprob":-1.5,"top_logprobs":[{"token":" you","id":13,"logprob":-0.5},)"
        R"({"token":" there","id":11,"logprob":-1.5}]},{"token":"!","id":12,"logprob":-0.25,"top_logprobs":[)"
        R"({"token":"!","id":12,"logprob":-0.25},{"token":".","id":14,"logprob":-2}]}],)"
        R"("usage":{"prompt_tokens":3,"completion_tokens":1,"cached_tokens":0}})");
}

TEST_CASE("OpenAI lines: vLLM's prompt_logprobs maps, in the choice for completions, at the response level for chat") {
  const std::string maps =
      R"([null,{"11":{"logprob":-1.5,"rank":2,"decoded_token":" there"},"13":{"logprob":-0.5,"rank":1,)"
      R"("decoded_token":" you"}},{"12":{"logprob":-0.25,"rank":1,"decoded_token":"!"},"14":{"logprob":-2,)"
      R"("rank":2,"decoded_token":"."}}])";
  const std::string completion = format_openai_batch_line(record(), RecordContext{false, "m"});
  CHECK(completion.find(R"("finish_reason":"length","prompt_logprobs":)" + maps + "}],") != std::string::npos);
  const std::string chat = format_openai_batch_line(record(), RecordContext{true, "m"});
  CHECK(chat.find(R"("finish_reason":"length"}],)") != std::string::npos);
  CHECK(chat.ends_with(R"("prompt_tokens_details":{"cached_tokens":0}},"prompt_logprobs":)" + maps +
                       R"(}},"error":null})"));
  // The token is listed first with its own rank when it is not among the top k.
  RequestOutput ranked = record();
  ranked.prompt_logprobs = prompt_entries(1);
  CHECK(format_openai_batch_line(ranked, RecordContext{false, "m"})
            .find(R"({"11":{"logprob":-1.5,"rank":2,"decoded_token":" there"},"13":{"logprob":-0.5,"rank":1,)") !=
        std::string::npos);
}

TEST_CASE("OpenAI completions echo: the prompt's text and entries come first") {
  RequestOutput output = record();
  output.prompt_logprobs.reset();
  output.echo_text = "Hi there!";
  output.echo_logprobs = prompt_entries(1);
  CHECK(format_openai_batch_line(output, RecordContext{false, "m"})
            .find(R"("choices":[{"index":0,"text":"Hi there! Bye","logprobs":{"tokens":["Hi"," there","!"," Bye"],)"
                  R"("token_logprobs":[null,-1.5,-0.25,-0.75],"top_logprobs":[null,{" you":-0.5," there":-1.5},)"
                  R"({"!":-0.25},{" Bye":-0.75}],"text_offset":[0,2,8,9]},"finish_reason":"length"}],)") !=
        std::string::npos);
  // Without logprobs only the text is echoed.
  output.echo_logprobs.reset();
  output.choices[0].logprobs.reset();
  CHECK(format_openai_batch_line(output, RecordContext{false, "m"})
            .find(R"({"index":0,"text":"Hi there! Bye","logprobs":null,"finish_reason":"length"})") !=
        std::string::npos);
}
