// A numerical failure (a NaN in the weights) ends the affected requests with a
// numerical_error record and never the process: the default model with the embedding row of
// one token set to NaN, one request that reads it (n = 2) and one that does not.
#include <doctest/doctest.h>

#include <limits>
#include <map>
#include <vector>

#include "cpu/cpu_backend.h"
#include "engine/engine.h"
#include "engine/run_to_completion.h"
#include "loader/model_files.h"
#include "test_paths.h"

using namespace pagedgen;

TEST_CASE("NaN logits: an error record for the request that hit them, the others complete") {
  PAGEDGEN_SKIP_WITHOUT_DEFAULT_MODEL();
  const ModelFiles files(*test::default_model());
  ModelWeights weights = files.load_weights();
  constexpr TokenId kPoisoned = 500;
  const auto hidden = static_cast<std::size_t>(files.config().hidden_size);
  // The weights' storage is ours to change: one embedding row of NaN. SmolLM2 ties the
  // output head to the embeddings, so the head gets an intact copy first (else the NaN row
  // would be a NaN logit in every request).
  const std::size_t num_embedding = static_cast<std::size_t>(files.config().vocab_size) * hidden;
  std::vector<float> output_head(weights.output, weights.output + num_embedding);
  weights.output = output_head.data();
  float* row = const_cast<float*>(weights.token_embd) + static_cast<std::size_t>(kPoisoned) * hidden;
  std::fill(row, row + hidden, std::numeric_limits<float>::quiet_NaN());
  CpuBackend backend(files.config(), weights);

  std::vector<PreparedRequest> requests(2);
  requests[0].prompt_ids = {1, 2, 3, kPoisoned};
  requests[0].sampling.n = 2;
  requests[1].prompt_ids = {1, 2, 3, 600};
  for (std::size_t i = 0; i < requests.size(); ++i) {
    requests[i].index = i;
    requests[i].seed_key = std::to_string(i);
    requests[i].sampling.temperature = 0;
    requests[i].sampling.max_tokens = 4;
    requests[i].sampling.ignore_eos = true;
  }
  EngineConfig config;
  config.num_blocks = 16;
  config.max_model_len = 64;
  Engine engine(config, backend, &files.tokenizer());
  engine.add_requests(requests);
  std::map<uint64_t, OutputRecord> records;
  for (OutputRecord& record : run_to_completion(engine))
    CHECK(records.emplace(record_index(record), std::move(record)).second);

  REQUIRE(records.size() == 2);
  const auto* error = std::get_if<RequestError>(&records.at(0));
  REQUIRE(error != nullptr);
  CHECK(error->code == "numerical_error");
  CHECK(error->message.find("not finite") != std::string::npos);
  const auto* output = std::get_if<RequestOutput>(&records.at(1));
  REQUIRE(output != nullptr);
  CHECK(output->choices.at(0).num_tokens == 4);
  CHECK(engine.stats().num_rejected_requests == 1);
  CHECK(engine.scheduler().kv().stats().num_used_blocks == 0);
}
