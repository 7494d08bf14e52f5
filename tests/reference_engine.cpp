#include "reference_engine.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <variant>

#include "engine/engine.h"
#include "engine/run_to_completion.h"

namespace pagedgen::test {

std::vector<Completion> engine_greedy(Backend& backend, const Tokenizer& tokenizer,
                                      const std::vector<ReferencePrompt>& prompts, const ReferenceEngineRun& run) {
  std::vector<PreparedRequest> requests;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    PreparedRequest r;
    r.index = i;
    r.seed_key = prompts[i].name;
    r.prompt_ids = prompts[i].prompt_ids;
    r.sampling.temperature = 0;
    r.sampling.max_tokens = static_cast<int32_t>(prompts[i].greedy_ids.size());
    r.sampling.ignore_eos = true;
    requests.push_back(r);
  }
  EngineConfig config;
  config.block_size = run.block_size;
  config.num_blocks = run.num_blocks;
  config.max_batch_tokens = run.max_batch_tokens;
  config.max_model_len = run.max_model_len;
  Engine engine(config, backend, &tokenizer);
  engine.add_requests(requests);
  std::vector<Completion> out(prompts.size());
  for (const OutputRecord& record : run_to_completion(engine)) {
    REQUIRE(std::holds_alternative<RequestOutput>(record));
    const auto& output = std::get<RequestOutput>(record);
    REQUIRE(output.choices.size() == 1);
    out[output.index] = output.choices[0];
  }
  return out;
}

TeacherForcedGreedy teacher_forced_greedy(LogitsBackend& backend, PagedBatchBuilder& builder, std::size_t seq,
                                          const ReferencePrompt& p, std::vector<float>& logits, float margin) {
  TeacherForcedGreedy r;
  for (std::size_t step = 0; step < p.greedy_ids.size(); ++step) {
    const auto ours = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    ++r.num_steps;
    if (ours == p.greedy_ids[step]) {
      ++r.num_equal;
    } else {
      CAPTURE(step);
      MESSAGE(p.name << " step " << step << ": ours " << ours << ", the reference's " << p.greedy_ids[step]
                     << " (its margin " << p.greedy_margins[step] << ")");
      CHECK(p.greedy_margins[step] < margin);
      r.worst_margin = std::max(r.worst_margin, p.greedy_margins[step]);
    }
    if (step + 1 < p.greedy_ids.size()) backend.forward(builder.step({{seq, {p.greedy_ids[step]}}}), logits);
  }
  return r;
}

}  // namespace pagedgen::test
