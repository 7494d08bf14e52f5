// Engine: the decode loop. Plans the prompts (prefix planner), then steps the scheduler:
// build a StepBatch, run the backend, sample, check stops, fork n > 1 samples, finish.
// Each finished request (or request that cannot run) is handed out as an OutputRecord.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "engine/run_stats.h"
#include "io/output_record.h"
#include "sample/sampling_params.h"
#include "tokenizer/tokenizer.h"

namespace pagedgen {

struct EngineConfig {
  int32_t block_size = 16;
  int32_t num_blocks = 0;
  int32_t max_num_seqs = 256;
  int32_t max_batch_tokens = 2048;
  bool prefix_sharing = true;
  int64_t max_model_len = 0;   // prompt + generated tokens of one sequence, at most
  uint64_t run_seed = 0;
};

// A request ready to decode: its prompt as token ids.
struct PreparedRequest {
  uint64_t index = 0;                   // input line (Request::index)
  std::optional<std::string> id_json;   // echoed in the output
  std::string seed_key;                 // Request::seed_key
  std::vector<TokenId> prompt_ids;
  SamplingParams sampling;
};

class Engine {
 public:
  // backend, tokenizer must outlive the engine. The backend's KV pool is allocated here.
  Engine(const EngineConfig& config, Backend& backend, const Tokenizer& tokenizer, int64_t vocab_size);

  // Decodes every request; `on_done` gets each one's record as it finishes (any order).
  // `on_step` (optional) is called after every step, e.g. for progress.
  void run(std::vector<PreparedRequest> requests, const std::function<void(OutputRecord)>& on_done,
           const std::function<void(const RunStats&)>& on_step = {});

  // Figures of the runs so far (the KV, token and time fields; the caller fills the rest).
  const RunStats& stats() const { return stats_; }
  RunStats& stats() { return stats_; }

 private:
  EngineConfig config_;
  Backend& backend_;
  const Tokenizer& tokenizer_;
  int64_t vocab_size_;
  RunStats stats_;
};

}  // namespace pagedgen
