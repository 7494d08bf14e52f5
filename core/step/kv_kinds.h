// The layer kinds of the paged KV cache: each kind has its own pool of blocks and its own
// block ids, and one block id addresses the same slots in every layer of its kind. Kind 0
// holds the full-attention layers (every layer of a model without sliding windows); kind
// 1, 2, ... hold the layers of one sliding window each, whose blocks no query can reach
// any more are given back while a sequence runs.
//
//   Gemma 3 (window 512 on 5 of every 6 layers):  kind 0 = {window 0, the global layers}
//                                                  kind 1 = {window 512, the local layers}
#pragma once

#include <cstdint>

namespace pagedgen {

using KvKindId = int32_t;  // index into a model's kinds

struct KvKind {
  int32_t window = 0;      // > 0: the layers attend to the last `window` positions; 0: to every position
  int32_t num_layers = 0;  // layers of the model in this kind
};

}  // namespace pagedgen
