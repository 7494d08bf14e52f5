// PreparedRequest: a request as the engine takes it, its prompt already token ids.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sample/sampling_params.h"
#include "step/ids.h"

namespace pagedgen {

struct PreparedRequest {
  uint64_t index = 0;                  // input line (Request::index)
  std::optional<std::string> id_json;  // echoed in the output
  std::string seed_key;                // Request::seed_key
  std::vector<TokenId> prompt_ids;
  SamplingParams sampling;
  std::optional<std::string> echo_text;  // sampling.echo: the prompt's text as the output repeats it
};

}  // namespace pagedgen
