// StopChecker: follows one sample's generated tokens and decoded text and decides when it
// ends and why: a stop string (text cut before it, or after it with
// include_stop_str_in_output), a stop token id or end-of-generation id, a structured
// output's value that is complete ("stop"), or max_tokens ("length"). Only the final text
// is kept, so nothing is held back for streaming; a stop string may span any number of
// tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sample/sampling_params.h"
#include "step/ids.h"

namespace pagedgen {

enum class FinishReason { kStop, kLength };

// "stop" or "length", as written in output lines.
std::string_view finish_reason_name(FinishReason reason);

// Order of checks after each token, as in vLLM:
//   1. fewer than min_tokens tokens: no stop of any kind (the sampler masks stop ids);
//   2. end-of-generation id (unless ignore_eos) or stop token id -> "stop"; the token's
//      text is not added, unless include_stop_str_in_output (vLLM's detokenizer then
//      decodes it like any token: a control token's text only without skip_special_tokens);
//   3. a stop string that ends in the new text -> "stop"; the text is cut before the
//      earliest such match, or after it with include_stop_str_in_output;
//   4. the token closed a structured output's value that nothing but the end may follow
//      -> "stop" (also on the max_tokens-th token: the value is whole);
//   5. max_tokens tokens -> "length".
class StopChecker {
 public:
  // end_of_generation: Tokenizer::special().end_of_generation. `params` is copied from.
  StopChecker(const SamplingParams& params, std::span<const TokenId> end_of_generation);

  // Records one generated token and the text it completed (IncrementalDecoder::push);
  // `value_closed`: the sample's grammar allows nothing but the end after it. Returns the
  // finish reason when the sample must stop now. Must not be called after.
  std::optional<FinishReason> append(TokenId token, std::string_view new_text, bool value_closed = false);

  // Ends the sample early with "length" (e.g. the model's context is full).
  void finish_length();

  // Text the decoder still held when the sample ended (IncrementalDecoder::finish()):
  // appended unless a stop string or stop token ended the text.
  void append_held_back(std::string_view held_back);

  const std::string& text() const { return text_; }
  int32_t num_tokens() const { return num_tokens_; }
  std::optional<FinishReason> finish_reason() const { return finish_reason_; }

 private:
  struct Match {
    std::size_t begin;  // of the stop string in text_
    std::size_t end;    // just past it
  };
  std::optional<Match> find_stop_string(std::size_t previous_size) const;
  // Steps 2-4 for a token past min_tokens: its text added unless a stop id leaves it out.
  std::optional<FinishReason> check_stops(TokenId token, std::string_view new_text, bool value_closed);
  // Ends the sample with "stop"; `text_closed`: nothing the decoder still holds is added.
  std::optional<FinishReason> stop(bool text_closed);

  std::vector<std::string> stop_strings_;
  std::vector<TokenId> stop_ids_;  // stop_token_ids, plus end-of-generation unless ignore_eos
  int32_t min_tokens_;
  int32_t max_tokens_;
  bool include_stop_;  // include_stop_str_in_output
  std::string text_;
  int32_t num_tokens_ = 0;
  std::optional<FinishReason> finish_reason_;
  bool text_closed_ = false;  // a stop string, or a stop token left out of the text, ended it
};

}  // namespace pagedgen
