// JSON pieces of log-probability output that both output formats write: a log probability
// as a number (-inf, which JSON cannot hold, as -9999.0, as the OpenAI API and vLLM write
// it) and a token's bytes as a list of integers.
#pragma once

#include <string>
#include <string_view>

namespace pagedgen {

// Appends the shortest decimal that reads back as the same float.
void append_logprob(std::string& out, float logprob);

// Appends [b0,b1,...], each byte as 0..255.
void append_byte_list(std::string& out, std::string_view bytes);

}  // namespace pagedgen
