// RunStats: the figures of one run as the stats JSON (--stats) and the end-of-run summary
// give them: what the job knows (model, device, input lines, load and prepare time) beside
// what the engine counted (engine/engine_stats.h). Every figure counted, never estimated.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/engine_stats.h"
#include "util/json_writer.h"

namespace pagedgen {

struct JobStats {
  std::string model;
  // Device bytes (GPU backends; all zero on the CPU): weights, KV pool, activations.
  std::string device;  // the GPU's name, empty on the CPU
  int64_t device_weight_bytes = 0;
  int64_t device_kv_pool_bytes = 0;
  int64_t device_activation_bytes = 0;

  // Which job and share of it (`merge` checks the stats of shards by them).
  std::string job_key;        // io/manifest.h job_key: the same for every shard of one job
  std::string shard = "0/1";  // K/N ("all/N" once merged)

  int64_t num_lines = 0;  // input lines read, blank ones included
  int64_t num_blank_lines = 0;
  int64_t num_requests = 0;      // non-blank lines this run answered (computed, or error lines)
  int64_t num_failed_lines = 0;  // lines whose request could not be read or prepared
  // What the figures leave out: lines of the output answered by an earlier, interrupted
  // run (a resume), and requests read but not finished when the run was stopped.
  int64_t num_earlier_requests = 0;
  int64_t num_unfinished_requests = 0;

  double load_seconds = 0;
  double prepare_seconds = 0;  // read, template, tokenize
};

struct RunStats {
  JobStats job;
  EngineStats engine;

  // Lines written as error records: bad lines, and requests the engine could not fit.
  int64_t num_failed_requests() const { return job.num_failed_lines + engine.num_rejected_requests; }

  // Folds in the figures of another run of the same job (`pagedgen merge` of shards):
  // counts, sums and times add up, peaks take the larger one. Throws Error when the other
  // run is of another job or model.
  void add_run(const RunStats& other);

  // The figures cover every request of the output (no earlier run, nothing unfinished).
  bool covers_whole_output() const { return job.num_earlier_requests == 0 && job.num_unfinished_requests == 0; }
  // What they cover, said plainly (the stats JSON's coverage.note, the summary's first line).
  std::string coverage_note() const;

  // The stats JSON (--stats): one field per line, each value on its line.
  std::string to_json() const;
  JsonObject to_json_object() const;
  // Reads what to_json wrote back (the failed count as the job's). Throws Error naming the
  // file's problem.
  static RunStats from_json(std::string_view json);
  // A few lines for stderr at the end of a run.
  std::string summary() const;
};

}  // namespace pagedgen
