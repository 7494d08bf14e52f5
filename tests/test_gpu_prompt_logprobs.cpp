// Prompt log probabilities on the device (sampling_batch.h's prompt rows, computed by
// logprob_kernels.cu beside the sampled rows' log probabilities):
//   - the device sampler: prompt rows of every row kind, mixed with sampled rows that ask
//     for log probabilities, give token_logprobs' values within the log's ulp, its top ids
//     and rank, and no result for a row the sampler could not use (NaN, +inf, all -inf);
//   - through the engine: prompt_logprobs (max_tokens 0, and beside generation) of the
//     reference prompts near the CPU backend's, float32 within 4e-3 (the logits' tolerance
//     twice), bfloat16 within 0.02 on the real model.
// Skips without a CUDA device.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>
#include <variant>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cuda_backend.h"
#include "device_sampler.h"
#include "engine/engine.h"
#include "engine/run_to_completion.h"
#include "gpu_test_device.h"
#include "gpu_test_model.h"
#include "reference_data.h"
#include "sample/token_logprobs.h"
#include "sampling_rows.h"

using namespace pagedgen;

namespace {

// The prompt_logprobs of each request, by request index, from the engine on `backend`.
std::vector<std::vector<GeneratedTokenLogprobs>> engine_prompt_logprobs(Backend& backend,
                                                                        const std::vector<PreparedRequest>& requests) {
  Engine engine(EngineConfig{.block_size = 16, .num_blocks = 256, .max_batch_tokens = 256, .max_model_len = 2048},
                backend, nullptr);
  engine.add_requests(requests);
  std::vector<std::vector<GeneratedTokenLogprobs>> out(requests.size());
  for (OutputRecord& record : run_to_completion(engine)) {
    REQUIRE(std::holds_alternative<RequestOutput>(record));
    auto& output = std::get<RequestOutput>(record);
    REQUIRE(output.prompt_logprobs.has_value());
    out[output.index] = std::move(*output.prompt_logprobs);
  }
  return out;
}

// The reference prompts scored with 5 alternatives: the first three scoring only, the
// others beside 4 greedy tokens.
std::vector<PreparedRequest> scoring_requests() {
  std::vector<PreparedRequest> requests;
  for (const test::ReferencePrompt& prompt : test::load_reference_prompts()) {
    PreparedRequest& r = requests.emplace_back();
    r.index = requests.size() - 1;
    r.seed_key = std::to_string(r.index);
    r.prompt_ids = prompt.prompt_ids;
    r.sampling.prompt_logprobs = 5;
    r.sampling.temperature = 0;
    r.sampling.max_tokens = r.index < 3 ? 0 : 4;
  }
  return requests;
}

// Every device value within `tolerance` of the CPU's: the token's, and the top k's rank by
// rank (near-ties may swap ids, never values by more than the tolerance).
void check_near(const std::vector<std::vector<GeneratedTokenLogprobs>>& got,
                const std::vector<std::vector<GeneratedTokenLogprobs>>& expected, double tolerance) {
  REQUIRE(got.size() == expected.size());
  double max_diff = 0.0;
  for (std::size_t r = 0; r < got.size(); ++r) {
    REQUIRE(got[r].size() == expected[r].size());
    for (std::size_t i = 1; i < got[r].size(); ++i) {
      CAPTURE(r);
      CAPTURE(i);
      REQUIRE(got[r][i].token.id == expected[r][i].token.id);
      max_diff =
          std::max(max_diff, static_cast<double>(std::abs(got[r][i].token.logprob - expected[r][i].token.logprob)));
      REQUIRE(got[r][i].top.size() == expected[r][i].top.size());
      for (std::size_t j = 0; j < got[r][i].top.size(); ++j)
        max_diff =
            std::max(max_diff, static_cast<double>(std::abs(got[r][i].top[j].logprob - expected[r][i].top[j].logprob)));
    }
  }
  MESSAGE("largest |device - cpu| prompt logprob: " << max_diff);
  CHECK(max_diff <= tolerance);
}

}  // namespace

TEST_CASE("device prompt rows: token_logprobs' values, top ids and rank, none for an unusable row") {
  REQUIRE_GPU();
  std::mt19937_64 gen(31);
  for (const std::size_t vocab : {std::size_t{7}, std::size_t{1000}, std::size_t{49152}}) {
    CAPTURE(vocab);
    std::vector<float> logits;
    for (int r = 0; r < test::kNumRowKinds; ++r) {
      const std::vector<float> row = test::make_logits_row(vocab, static_cast<test::RowKind>(r), gen);
      logits.insert(logits.end(), row.begin(), row.end());
    }
    std::deque<SamplingParams> params;  // stable addresses for SamplingRow::params
    SamplingBatch batch;
    for (int r = 0; r < test::kNumRowKinds; ++r) {
      params.emplace_back().temperature = 0;
      params.back().logprobs = 3;
      batch.rows.push_back(SamplingRow{r, &params.back(), 0, 0, {}, {}});
      for (int k : {0, 1, kMaxTopLogprobs}) batch.prompt_rows.push_back({r, static_cast<TokenId>(gen() % vocab), k});
    }
    const gpu::DeviceBuffer device_logits = test::to_device(logits);
    gpu::DeviceSampler sampler;
    const std::vector<SampledToken> got =
        sampler.sample(device_logits.as<float>(), test::kNumRowKinds, static_cast<int32_t>(vocab), batch, nullptr);
    REQUIRE(got.size() == batch.rows.size() + batch.prompt_rows.size());
    const auto close = [](float a, float b) {
      return a == b || std::abs(a - b) <= 1e-6f * std::max(1.0f, std::abs(a));
    };
    for (std::size_t i = 0; i < batch.prompt_rows.size(); ++i) {
      const PromptLogprobRow& row = batch.prompt_rows[i];
      const SampledToken& result = got[batch.rows.size() + i];
      const std::span<const float> row_logits(logits.data() + static_cast<std::size_t>(row.logits_row) * vocab, vocab);
      CAPTURE(row.logits_row);
      CAPTURE(row.num_top);
      REQUIRE(result.logprobs.has_value() == is_usable_logprobs_row(row_logits));
      if (!result.logprobs) {
        CHECK_FALSE(result.id.has_value());
        continue;
      }
      CHECK(result.id == row.token);
      const TokenLogprobs cpu = token_logprobs(row_logits, row.token, row.num_top);
      CHECK(close(result.logprobs->logprob, cpu.logprob));
      CHECK(result.logprobs->rank == cpu.rank);
      REQUIRE(result.logprobs->top.size() == cpu.top.size());
      for (std::size_t j = 0; j < cpu.top.size(); ++j) {
        CHECK(result.logprobs->top[j].id == cpu.top[j].id);
        CHECK(close(result.logprobs->top[j].logprob, cpu.top[j].logprob));
      }
    }
    // The sampled rows' log probabilities keep their place, with their token's rank.
    for (std::size_t i = 0; i < batch.rows.size(); ++i)
      if (got[i].logprobs) CHECK(got[i].logprobs->rank >= 1);
  }
}

TEST_CASE("through the engine: prompt_logprobs near the CPU backend's, float32 within 4e-3, bfloat16 within 0.02") {
  REQUIRE_GPU();
  const test::GpuTestModel& m = test::gpu_test_model();
  MESSAGE("model: " << m.name);
  const std::vector<PreparedRequest> requests = scoring_requests();
  CpuBackend cpu(m.config, m.weights, 2);
  const auto expected = engine_prompt_logprobs(cpu, requests);
  for (const gpu::DeviceDtype dtype : {gpu::DeviceDtype::F32, gpu::DeviceDtype::BF16}) {
    CAPTURE(gpu::device_dtype_name(dtype));
    gpu::CudaBackendOptions options;
    options.dtype = dtype;
    options.max_batch_tokens = 256;
    options.max_logits_rows = 8;  // the prompt rows grow the logits buffer past it
    gpu::CudaBackend cuda(m.config, m.tensors, m.name, options);
    const auto got = engine_prompt_logprobs(cuda, requests);
    if (dtype == gpu::DeviceDtype::F32) {
      check_near(got, expected, 4e-3);
    } else if (m.dummy) {
      MESSAGE("dummy weights: the bfloat16 prompt logprobs ran, their values are not checked");
    } else {
      check_near(got, expected, 0.02);
    }
  }
}
