// The sweep job (`pagedgen sweep`): one input through a fresh engine at each block size,
// on one backend (one model load), and whether the outputs agree. They must, every field of
// every line but usage.cached_tokens, which by definition depends on the block size:
//
//   SweepResult r = sweep_block_sizes(settings, input, backend, &tokenizer, on_block_size);
//   r.rows[k]            block size k's figures and output lines
//   r.differing_lines    input lines whose output is not the same at every size
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/kv_pool_budget.h"
#include "engine/engine.h"
#include "job/input_loader.h"
#include "job/run_stats.h"
#include "tokenizer/tokenizer.h"

namespace pagedgen {

struct SweepSettings {
  std::vector<int32_t> block_sizes;  // run in this order
  EngineConfig engine;               // block_size and num_blocks are each size's
  KvPoolBudget pool_budget;          // each size's pool: as many blocks as the backend gives for it
  // What the caller knows of the run (model, device, load time): each row's job figures,
  // to which the sweep adds the input's lines, requests and failed lines.
  JobStats job;
};

struct SweepRow {
  int32_t block_size = 0;
  RunStats stats;
  double wall_seconds = 0;         // this size's engine run, records formatted
  std::vector<std::string> lines;  // the output file, one line per non-blank input line, in input order
};

struct SweepResult {
  std::vector<SweepRow> rows;             // one per block size, in the settings' order
  std::vector<uint64_t> differing_lines;  // input lines (0-based) whose output differs between sizes

  bool outputs_identical() const { return differing_lines.empty(); }
  // Some line is an error record (a bad input line, or a request no pool could fit).
  bool any_failed() const;
};

// Runs `input` at each block size on `backend`, whose KV pool is allocated anew for each;
// `tokenizer` decodes the text. `on_block_size` (may be empty) hears of each row as it is
// done, e.g. to write its output file or say how long it took.
SweepResult sweep_block_sizes(const SweepSettings& settings, const LoadedInput& input, Backend& backend,
                              const Tokenizer* tokenizer,
                              const std::function<void(const SweepRow&)>& on_block_size = {});

}  // namespace pagedgen
