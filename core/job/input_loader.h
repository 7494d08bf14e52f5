// load_input: reads a whole JSONL input and prepares its requests (chat template, token
// ids), keeping the error record of every bad line. For the commands that need every
// request at once before running (`plan`, `sweep`, `generate`).
#pragma once

#include <cstdint>
#include <istream>
#include <vector>

#include "engine/prepared_request.h"
#include "job/prompt_builder.h"
#include "io/request.h"
#include "sample/sampling_params.h"

namespace pagedgen {

struct LoadedInput {
  std::vector<PreparedRequest> requests;  // input order
  std::vector<RequestError> errors;       // input order
  std::vector<uint64_t> indices;          // every non-blank line, in input order
  uint64_t num_lines = 0;                 // blank ones included
  uint64_t num_blank_lines = 0;
};

LoadedInput load_input(std::istream& input, const SamplingParams& defaults, const PromptBuilder& builder);

}  // namespace pagedgen
