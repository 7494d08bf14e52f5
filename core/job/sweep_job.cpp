#include "job/sweep_job.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <variant>

#include "engine/run_to_completion.h"
#include "io/output_record.h"
#include "io/plain_output.h"

namespace pagedgen {

namespace {

// The job's figures of a row: the caller's, and what the input holds.
JobStats input_job_stats(JobStats job, const LoadedInput& input) {
  job.num_lines = static_cast<int64_t>(input.num_lines);
  job.num_blank_lines = static_cast<int64_t>(input.num_blank_lines);
  job.num_requests = std::ssize(input.indices);
  job.num_failed_lines = std::ssize(input.errors);
  return job;
}

// One block size: the whole input through a fresh engine, its output lines in input order,
// and (into `comparable`) the same lines with cached_tokens set to 0.
SweepRow run_block_size(const SweepSettings& settings, const LoadedInput& input, Backend& backend,
                        const Tokenizer* tokenizer, int32_t block_size, std::vector<std::string>& comparable) {
  SweepRow row;
  row.block_size = block_size;
  const auto start = std::chrono::steady_clock::now();
  EngineConfig config = settings.engine;
  config.block_size = block_size;
  config.num_blocks = backend.kv_pool_blocks(settings.pool_budget, static_cast<std::size_t>(block_size));
  Engine engine(config, backend, tokenizer);
  std::vector<OutputRecord> records(input.errors.begin(), input.errors.end());
  engine.add_requests(input.requests);
  for (OutputRecord& record : run_to_completion(engine)) records.push_back(std::move(record));
  std::ranges::sort(records, {}, [](const OutputRecord& r) { return record_index(r); });
  for (OutputRecord& record : records) {
    row.lines.push_back(format_plain_line(record));
    if (auto* output = std::get_if<RequestOutput>(&record)) output->cached_tokens = 0;
    comparable.push_back(format_plain_line(record));
  }
  row.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  row.stats.engine = engine.stats();
  row.stats.job = input_job_stats(settings.job, input);
  return row;
}

}  // namespace

bool SweepResult::any_failed() const {
  return std::ranges::any_of(rows, [](const SweepRow& r) { return r.stats.num_failed_requests() > 0; });
}

SweepResult sweep_block_sizes(const SweepSettings& settings, const LoadedInput& input, Backend& backend,
                              const Tokenizer* tokenizer, const std::function<void(const SweepRow&)>& on_block_size) {
  SweepResult result;
  std::vector<std::string> first;                          // the first size's comparable lines
  std::vector<bool> differs(input.indices.size(), false);  // [num non-blank lines]
  for (int32_t block_size : settings.block_sizes) {
    std::vector<std::string> comparable;
    result.rows.push_back(run_block_size(settings, input, backend, tokenizer, block_size, comparable));
    if (result.rows.size() == 1)
      first = std::move(comparable);
    else
      for (std::size_t i = 0; i < comparable.size(); ++i) differs[i] = differs[i] || comparable[i] != first[i];
    if (on_block_size) on_block_size(result.rows.back());
  }
  for (std::size_t i = 0; i < differs.size(); ++i)
    if (differs[i]) result.differing_lines.push_back(input.indices[i]);
  return result;
}

}  // namespace pagedgen
