#include "engine/output_processor.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "grammar/token_bitmask.h"
#include "sample/allowed_token_ids.h"
#include "sample/sampler.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace pagedgen {

OutputProcessor::OutputProcessor(const Tokenizer* tokenizer, uint64_t run_seed, int64_t max_model_len,
                                 EngineStats& stats)
    : tokenizer_(tokenizer),
      run_seed_(run_seed),
      max_model_len_(max_model_len),
      stats_(stats),
      prompt_scores_(tokenizer) {
  if (tokenizer_) {
    end_of_generation_ = tokenizer_->special().end_of_generation;
    grammars_.emplace(*tokenizer_);
  }
}

namespace {

// Whether `mask` allows tokens but none other than `ids` (a closed value: only the end).
bool allows_only(std::span<const uint32_t> mask, std::span<const TokenId> ids) {
  int64_t num_allowed = 0;
  for (const uint32_t word : mask) num_allowed += std::popcount(word);
  int64_t num_ids_allowed = 0;
  for (const TokenId id : ids)
    if (static_cast<size_t>(id) / 32 < mask.size() && token_allowed(mask, id)) ++num_ids_allowed;
  return num_allowed > 0 && num_allowed == num_ids_allowed;
}

bool allows_none(std::span<const uint32_t> mask) {
  return std::all_of(mask.begin(), mask.end(), [](uint32_t word) { return word == 0; });
}

}  // namespace

std::unique_ptr<OutputProcessor::SampleState> OutputProcessor::new_sample(int64_t request_index, int32_t sample_index) {
  const PreparedRequest& r = requests_[static_cast<std::size_t>(request_index)];
  const uint64_t seed = sample_seed(r.sampling.seed, run_seed_, r.seed_key, static_cast<uint64_t>(sample_index));
  std::optional<IncrementalDecoder> decoder;
  if (tokenizer_) decoder.emplace(*tokenizer_, !r.sampling.skip_special_tokens, false);
  auto sample = std::make_unique<SampleState>(
      SampleState{.rng = Rng(seed),
                  .decoder = std::move(decoder),
                  .stop = StopChecker(r.sampling, end_of_generation_),
                  .allowed_ids = states_[static_cast<std::size_t>(request_index)].allowed_ids});
  if (grammars_ && r.sampling.response_format.is_constrained()) {
    GrammarMatcher& matcher = sample->grammar.emplace(grammars_->get(r.sampling.response_format));
    sample->allowed_tokens.resize(token_mask_words(matcher.grammar().vocabulary().size()));
    matcher.fill_next_token_mask(sample->allowed_tokens);
    if (!sample->allowed_ids.empty()) intersect_mask(sample->allowed_tokens, sample->allowed_ids);
  } else {
    sample->allowed_tokens.assign(sample->allowed_ids.begin(), sample->allowed_ids.end());
  }
  return sample;
}

std::vector<std::shared_ptr<const CompiledGrammar>> OutputProcessor::compile_grammars(
    std::span<const PreparedRequest> requests, const StopToken& stop) {
  std::vector<std::shared_ptr<const CompiledGrammar>> grammars;
  if (!grammars_) return grammars;
  for (const PreparedRequest& r : requests)
    if (r.sampling.response_format.is_constrained())
      grammars.push_back(grammars_->get(r.sampling.response_format, stop));
  return grammars;
}

void OutputProcessor::start_batch(std::vector<PreparedRequest> requests, std::span<const int32_t> order,
                                  Scheduler& scheduler, const StopToken& stop) {
  PG_CHECK(samples_.empty(), "a new batch while {} samples of the last one run", samples_.size());
  // The slow part of a constrained batch, before anything starts.
  const std::vector<std::shared_ptr<const CompiledGrammar>> grammars = compile_grammars(requests, stop);
  scheduler_ = &scheduler;
  requests_ = std::move(requests);
  states_.assign(requests_.size(), RequestState{});
  for (std::size_t i = 0; i < requests_.size(); ++i)
    if (tokenizer_ && !requests_[i].sampling.allowed_token_ids.empty())
      states_[i].allowed_ids = allowed_ids_mask(requests_[i].sampling.allowed_token_ids, tokenizer_->vocab_size());
  prompt_scores_.start_batch();
  for (int32_t request_index : order) {
    const PreparedRequest& r = requests_[static_cast<std::size_t>(request_index)];
    states_[static_cast<std::size_t>(request_index)].choices.resize(static_cast<std::size_t>(r.sampling.n));
    Sequence seq;
    seq.id = next_seq_id_++;
    seq.request_index = request_index;
    seq.sample_index = 0;
    seq.token_ids = r.prompt_ids;
    seq.num_prompt_tokens = static_cast<int32_t>(r.prompt_ids.size());
    seq.scores_prompt = r.sampling.prompt_scoring_top().has_value();
    seq.max_tokens = r.sampling.max_tokens;
    samples_.emplace(seq.id, new_sample(request_index, 0));
    scheduler.add(std::move(seq));
    ++stats_.num_samples;
  }
}

void OutputProcessor::reject(std::span<const RejectedSequence> rejected) {
  for (const RejectedSequence& x : rejected) {
    const int64_t request_index = x.sequence.request_index;
    RequestState& state = states_[static_cast<std::size_t>(request_index)];
    const PreparedRequest& r = requests_[static_cast<std::size_t>(request_index)];
    const auto sample = samples_.find(x.sequence.id);
    const bool failed = sample != samples_.end() && sample->second->failed;  // already counted
    samples_.erase(x.sequence.id);
    if (failed) continue;
    if (!state.error) state.error = RequestError{r.index, r.id_json, "request_too_large", x.reason};
    // A request with forked samples counts all of them: the ones not started are done too.
    state.num_finished += state.forked ? 1 : r.sampling.n;
    finish_request_if_done(request_index);
  }
}

// Rows in the order apply() consumes them: per sequence that needs logits, the new samples
// of its fork (1..n-1), then its own next token.
void OutputProcessor::note_starts(const SchedulerOutput& out, std::vector<RequestStart>& started) {
  for (const ScheduledSequence& s : out.scheduled) {
    const Sequence& seq = scheduler_->sequence(s.seq_id);
    RequestState& state = states_[static_cast<std::size_t>(seq.request_index)];
    if (seq.sample_index != 0 || state.started) continue;
    state.started = true;
    started.push_back({seq.request_index, seq.num_cached_prompt_tokens});
  }
}

SamplingBatch OutputProcessor::sampling_batch(const SchedulerOutput& out) {
  SamplingBatch batch;
  batch.end_of_generation = end_of_generation_;
  planned_.clear();
  unsampled_ends_.clear();
  const auto draw = [](const SamplingParams& params, SampleState& sample) {
    return params.is_greedy() ? uint64_t{0} : sample.rng.next_u64();
  };
  for (const ScheduledSequence& s : out.scheduled) {
    const Sequence& seq = scheduler_->sequence(s.seq_id);
    const PreparedRequest& r = requests_[static_cast<std::size_t>(seq.request_index)];
    prompt_scores_.add_rows(s, seq, r, batch);
    if (!s.needs_logits) continue;
    if (r.sampling.scores_only()) {
      unsampled_ends_.push_back(s.seq_id);
      continue;
    }
    const int32_t logits_row = s.first_logits_row + s.num_prompt_logits_rows;
    RequestState& state = states_[static_cast<std::size_t>(seq.request_index)];
    if (!state.forked && r.sampling.n > 1 && seq.num_generated_tokens() == 0) {
      state.forked = true;
      for (int32_t i = 1; i < r.sampling.n; ++i) {
        PlannedRow row{.seq_id = s.seq_id,
                       .child = new_sample(seq.request_index, i),
                       .child_index = i,
                       .request_index = seq.request_index,
                       .num_tokens = seq.num_tokens()};
        batch.rows.push_back(
            {logits_row, &r.sampling, 0, draw(r.sampling, *row.child), row.child->allowed_tokens, seq.token_ids});
        planned_.push_back(std::move(row));
      }
    }
    SampleState& sample = *samples_.at(s.seq_id);
    batch.rows.push_back({logits_row, &r.sampling, seq.num_generated_tokens(), draw(r.sampling, sample),
                          sample.allowed_tokens, seq.token_ids});
    planned_.push_back(
        PlannedRow{.seq_id = s.seq_id, .request_index = seq.request_index, .num_tokens = seq.num_tokens()});
  }
  return batch;
}

bool OutputProcessor::extend(SampleState& sample, const SampledToken& sampled, int32_t num_tokens) {
  const TokenId token = *sampled.id;
  ++stats_.num_generated_tokens;
  const bool value_closed = sample.grammar && advance_grammar(sample, token);
  const std::string text = sample.decoder ? sample.decoder->push(token) : "";
  if (sampled.logprobs) record_logprobs(sample, token, *sampled.logprobs);
  sample.num_text_chars += utf8_num_code_points(text);
  std::optional<FinishReason> reason = sample.stop.append(token, text, value_closed);
  if (!reason && num_tokens + 1 >= max_model_len_) {
    sample.stop.finish_length();
    reason = FinishReason::kLength;
  }
  return reason.has_value();
}

// The token's entry: its bytes and those of the alternatives, and where its text starts.
void OutputProcessor::record_logprobs(SampleState& sample, TokenId token, const TokenLogprobs& logprobs) const {
  const auto bytes = [&](TokenId id) { return tokenizer_ ? tokenizer_->token_bytes(id, true) : std::string(); };
  GeneratedTokenLogprobs entry;
  entry.token = LogprobToken{token, bytes(token), logprobs.logprob};
  for (const TokenLogprob& t : logprobs.top) entry.top.push_back(LogprobToken{t.id, bytes(t.id), t.logprob});
  entry.text_offset = sample.num_text_chars;
  sample.logprobs.push_back(std::move(entry));
}

bool OutputProcessor::ends_by_length(const PlannedRow& row, const SampleState& sample) const {
  const SamplingParams& params = requests_[static_cast<std::size_t>(row.request_index)].sampling;
  return sample.stop.num_tokens() + 1 >= params.max_tokens || row.num_tokens + 1 >= max_model_len_;
}

void OutputProcessor::end_failed_sequence(uint64_t seq_id) {
  scheduler_->finish(seq_id);
  samples_.erase(seq_id);
}

bool OutputProcessor::advance_grammar(SampleState& sample, TokenId token) const {
  GrammarMatcher& matcher = *sample.grammar;
  PG_CHECK(matcher.accept_token(token), "token {} is outside the mask its sampler was given", token);
  if (matcher.is_terminated()) return false;  // an end-of-generation token: the stop check ends it
  matcher.fill_next_token_mask(sample.allowed_tokens);
  const bool closed = matcher.is_complete() && allows_only(sample.allowed_tokens, end_of_generation_);
  if (!sample.allowed_ids.empty()) intersect_mask(sample.allowed_tokens, sample.allowed_ids);
  return closed;
}

void OutputProcessor::apply(std::span<const SampledToken> results) {
  Scheduler& scheduler = *scheduler_;
  PG_CHECK(results.size() >= planned_.size(), "{} token ids for {} sampling rows", results.size(), planned_.size());
  // The prompt's scores first: a request may end at this step's token.
  apply_prompt_rows(results.subspan(planned_.size()));
  const std::span<const SampledToken> tokens = results.first(planned_.size());
  for (std::size_t i = 0; i < planned_.size(); ++i) {
    PlannedRow& row = planned_[i];
    if (!row.child && samples_.at(row.seq_id)->failed) {
      end_failed_sequence(row.seq_id);  // its last step: the token is nobody's
      continue;
    }
    const Sequence& seq = scheduler.sequence(row.seq_id);
    if (!tokens[i].id) {
      fail_row(row);
      if (row.child) continue;
      if (ends_by_length(row, *samples_.at(row.seq_id)))
        end_failed_sequence(row.seq_id);
      else
        scheduler.append_token(row.seq_id, kFailedRowInputToken);
      continue;
    }
    const TokenId token = *tokens[i].id;
    if (row.child) {
      start_child(seq, row, tokens[i]);
      continue;
    }
    states_[static_cast<std::size_t>(seq.request_index)].forked = true;
    SampleState& sample = *samples_.at(row.seq_id);
    if (!extend(sample, tokens[i], row.num_tokens)) {
      scheduler.append_token(row.seq_id, token);
      continue;
    }
    complete_sequence(scheduler.finish(row.seq_id), token, sample);
  }
  planned_.clear();
  end_unsampled();
}

void OutputProcessor::apply_prompt_rows(std::span<const SampledToken> results) {
  for (const int64_t request_index : prompt_scores_.apply(results))
    fail_request(request_index,
                 "the model's logits at a prompt position of this request are not finite (NaN or infinity); the "
                 "weights or the computation in this dtype are broken for this input");
}

void OutputProcessor::end_unsampled() {
  for (const uint64_t seq_id : unsampled_ends_) {
    SampleState& sample = *samples_.at(seq_id);
    sample.stop.finish_length();
    const Sequence finished = scheduler_->finish(seq_id);
    complete_sample(finished, finished.sample_index, sample, {});
    samples_.erase(seq_id);
  }
  unsampled_ends_.clear();
}

void OutputProcessor::fail_request(int64_t request_index, std::string message) {
  RequestState& state = states_[static_cast<std::size_t>(request_index)];
  const PreparedRequest& r = requests_[static_cast<std::size_t>(request_index)];
  if (!state.error) state.error = RequestError{r.index, r.id_json, "numerical_error", std::move(message)};
}

// A sample whose sequence `finished` has left the scheduler, `last` its final token.
void OutputProcessor::complete_sequence(const Sequence& finished, TokenId last, SampleState& sample) {
  std::vector<TokenId> generated(finished.token_ids.begin() + finished.num_prompt_tokens, finished.token_ids.end());
  generated.push_back(last);
  complete_sample(finished, finished.sample_index, sample, std::move(generated));
  samples_.erase(finished.id);
}

// A row whose logits were unusable: its sample fails (a fork child is never created) and the
// request's record becomes an error; its other samples run on, their text unused.
void OutputProcessor::fail_row(PlannedRow& row) {
  const int64_t request_index = row.request_index;
  RequestState& state = states_[static_cast<std::size_t>(request_index)];
  const PreparedRequest& r = requests_[static_cast<std::size_t>(request_index)];
  SampleState& sample = row.child ? *row.child : *samples_.at(row.seq_id);
  const int32_t num_generated = sample.stop.num_tokens();
  if (!state.error && sample.grammar && sample.allowed_ids.empty() && allows_none(sample.allowed_tokens)) {
    // The grammar needs bytes that no token of this vocabulary writes.
    state.error = RequestError{r.index, r.id_json, "invalid_value",
                               fmt::format("response_format: no token of this model can write what the schema requires "
                                           "after {} generated tokens (a character its vocabulary lacks); change the "
                                           "schema's enum, const or property names",
                                           num_generated)};
  }
  if (!state.error && tokenizer_ && !leaves_a_token(row, sample))
    state.error = RequestError{r.index, r.id_json, "invalid_value",
                               fmt::format("no token may be picked after {} generated tokens: allowed_token_ids, "
                                           "bad_words and response_format, with min_tokens holding back the stop "
                                           "and end-of-generation ids, exclude every token; allow more tokens",
                                           num_generated)};
  fail_request(request_index, fmt::format("the model's logits for this request are not finite (NaN or infinity) "
                                          "after {} tokens; the weights or the computation in this dtype are broken "
                                          "for this input",
                                          row.num_tokens));
  if (row.child) {
    ++stats_.num_samples;
  } else {
    state.forked = true;
    sample.failed = true;
  }
  ++state.num_finished;
  finish_request_if_done(request_index);
}

bool OutputProcessor::leaves_a_token(const PlannedRow& row, const SampleState& sample) const {
  const SamplingParams& params = requests_[static_cast<std::size_t>(row.request_index)].sampling;
  const Sequence& seq = scheduler_->sequence(row.seq_id);  // a fork child's: its parent's prompt
  const SamplingRow sampling_row{0, &params, sample.stop.num_tokens(), 0, sample.allowed_tokens, seq.token_ids};
  return masks_leave_a_token(sampling_row, end_of_generation_, static_cast<std::size_t>(tokenizer_->vocab_size()));
}

// A new sample of an n > 1 fork: done at its first token, or a child sharing the parent's
// blocks (its first token then goes into a copy of the shared partial block).
void OutputProcessor::start_child(const Sequence& parent, PlannedRow& row, const SampledToken& sampled) {
  ++stats_.num_samples;
  const TokenId token = *sampled.id;
  if (extend(*row.child, sampled, row.num_tokens)) {
    complete_sample(parent, row.child_index, *row.child, {token});
    return;
  }
  Sequence child;
  child.id = next_seq_id_++;
  child.request_index = parent.request_index;
  child.sample_index = row.child_index;
  child.token_ids = parent.token_ids;
  child.token_ids.push_back(token);
  child.num_prompt_tokens = parent.num_prompt_tokens;
  child.max_tokens = parent.max_tokens;
  samples_.emplace(child.id, std::move(row.child));
  scheduler_->fork(parent.id, std::move(child));
}

void OutputProcessor::complete_sample(const Sequence& sequence, int32_t sample_index, SampleState& sample,
                                      std::vector<TokenId> token_ids) {
  const int64_t request_index = sequence.request_index;
  RequestState& state = states_[static_cast<std::size_t>(request_index)];
  if (sample_index == 0) state.cached_tokens = sequence.num_cached_prompt_tokens;
  sample.stop.append_held_back(sample.decoder ? sample.decoder->finish() : "");
  Completion& choice = state.choices[static_cast<std::size_t>(sample_index)].emplace(
      Completion{sample.stop.text(), *sample.stop.finish_reason(), sample.stop.num_tokens(), std::move(token_ids), {}});
  if (requests_[static_cast<std::size_t>(request_index)].sampling.logprobs)
    choice.logprobs = std::move(sample.logprobs);
  ++state.num_finished;
  finish_request_if_done(request_index);
}

void OutputProcessor::finish_request_if_done(int64_t request_index) {
  RequestState& state = states_[static_cast<std::size_t>(request_index)];
  const PreparedRequest& r = requests_[static_cast<std::size_t>(request_index)];
  if (state.num_finished < r.sampling.n) return;
  if (state.error) {
    records_.push_back(*state.error);
    ++stats_.num_rejected_requests;
    return;
  }
  RequestOutput output;
  output.index = r.index;
  output.id_json = r.id_json;
  output.prompt_tokens = static_cast<int64_t>(r.prompt_ids.size());
  output.cached_tokens = state.cached_tokens;
  prompt_scores_.fill_output(request_index, r, output);
  for (auto& c : state.choices) output.choices.push_back(std::move(*c));
  stats_.num_prompt_tokens += output.prompt_tokens;
  records_.push_back(std::move(output));
}

}  // namespace pagedgen
