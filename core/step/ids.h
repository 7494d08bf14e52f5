// The ids every layer passes around: a token of the vocabulary and a physical KV block.
// Plain int32 so that StepBatch arrays go to a device as they are.
#pragma once

#include <cstdint>

namespace pagedgen {

using TokenId = int32_t;  // index into the model's vocabulary
using BlockId = int32_t;  // index into the KV pool, like StepBatch::block_tables

}  // namespace pagedgen
