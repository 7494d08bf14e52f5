// Scheduler: the step policy (running sequences first, then admissions; preempt the newest
// when blocks run out) and the bookkeeping after each step.
#include "sched/scheduler.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "step/kv_slot.h"
#include "util/error.h"

namespace pagedgen {

Scheduler::Scheduler(const SchedulerConfig& config, const KvCacheConfig& kv_config) : config_(config), kv_(kv_config) {
  PG_CHECK(config_.max_num_seqs >= 1 && config_.max_batch_tokens >= 1, "max_num_seqs {}, max_batch_tokens {}",
           config_.max_num_seqs, config_.max_batch_tokens);
}

Sequence& Scheduler::at(uint64_t seq_id) {
  const auto it = sequences_.find(seq_id);
  PG_CHECK(it != sequences_.end(), "unknown sequence {}", seq_id);
  return it->second;
}

const Sequence& Scheduler::sequence(uint64_t seq_id) const { return const_cast<Scheduler*>(this)->at(seq_id); }

void Scheduler::add(Sequence sequence) {
  PG_CHECK(sequence.num_tokens() > 0 && sequence.num_prompt_tokens <= sequence.num_tokens(),
           "sequence {} with {} tokens, {} in the prompt", sequence.id, sequence.num_tokens(),
           sequence.num_prompt_tokens);
  sequence.status = SequenceStatus::Waiting;
  sequence.num_computed_tokens = 0;
  sequence.arrival_order = next_arrival_++;
  const uint64_t id = sequence.id;
  PG_CHECK(sequences_.emplace(id, std::move(sequence)).second, "sequence id {} added twice", id);
  waiting_.push_back(id);
}

std::optional<std::string> Scheduler::why_never_fits(const Sequence& seq) const {
  // Its tokens plus the slot of the next generated one, with the whole pool to itself.
  const int32_t num_needed = kv_.num_blocks_for_tokens(int64_t{seq.num_tokens()} + 1);
  if (num_needed > kv_.num_blocks())
    return fmt::format(
        "the sequence needs {} KV blocks of {} tokens for its {} tokens and the next one, but the pool "
        "has {}; give the run a larger KV pool, or shorten the prompt",
        num_needed, kv_.block_size(), seq.num_tokens(), kv_.num_blocks());
  for (KvKindId kind = 1; kind < kv_.num_kinds(); ++kind) {
    const int32_t num_window = kv_.num_blocks_alone(kind, seq.num_tokens(), config_.max_batch_tokens);
    if (num_window > kv_.num_blocks(kind))
      return fmt::format(
          "the sequence's window layers (window {}) need {} KV blocks of {} tokens at a step, but "
          "their pool has {}; give the run a larger KV pool, or fewer tokens per step",
          kv_.window(kind), num_window, kv_.block_size(), kv_.num_blocks(kind));
  }
  return std::nullopt;
}

SchedulerOutput Scheduler::schedule() {
  ++counters_.num_steps;
  SchedulerOutput out;
  // Window kinds give back what no query of a running sequence reaches any more.
  for (uint64_t id : running_) kv_.release_unreachable(id, at(id).num_computed_tokens);
  StepBudget budget{config_.max_batch_tokens, config_.max_prompt_logits_rows};
  schedule_running(out, budget);
  // After a preemption the pool is short: admitting now would only preempt again.
  if (out.preempted.empty()) admit_waiting(out, budget);
  out.num_batched_tokens = config_.max_batch_tokens - budget.tokens;
  build_step_batch(out);
  PG_CHECK(!has_unfinished() || !out.scheduled.empty() || !out.preempted.empty() || !out.rejected.empty(),
           "no progress: {} waiting, {} running", waiting_.size(), running_.size());
  return out;
}

namespace {

// Prompt positions of [begin, begin + num_tokens) whose logits score the next prompt token.
int32_t num_scored_positions(const Sequence& seq, int32_t begin, int32_t num_tokens) {
  if (!seq.scores_prompt) return 0;
  return std::max(0, std::min(begin + num_tokens, seq.num_prompt_tokens - 1) - begin);
}

}  // namespace

int32_t Scheduler::take_chunk(const Sequence& seq, int32_t begin, int32_t num_wanted, StepBudget& budget) {
  // Short of rows, every position of the shorter chunk is scored: it takes all that is left.
  const int32_t num_tokens = num_scored_positions(seq, begin, num_wanted) <= budget.prompt_logits_rows
                                 ? num_wanted
                                 : budget.prompt_logits_rows;
  budget.prompt_logits_rows -= num_scored_positions(seq, begin, num_tokens);
  budget.tokens -= num_tokens;
  return num_tokens;
}

// Running sequences in admission order: a decode gets 1 token, a prefill its next chunk.
void Scheduler::schedule_running(SchedulerOutput& out, StepBudget& budget) {
  for (std::size_t i = 0; i < running_.size() && budget.tokens > 0; ++i) {
    Sequence& seq = at(running_[i]);
    PG_CHECK(seq.num_uncomputed_tokens() > 0, "running sequence {} has nothing to compute", seq.id);
    StepBudget after = budget;
    const int32_t num_new_tokens =
        take_chunk(seq, seq.num_computed_tokens, std::min(seq.num_uncomputed_tokens(), budget.tokens), after);
    if (num_new_tokens == 0) continue;  // no prompt rows left this step: it scores on the next
    // The newest running sequence (possibly this one) gives its blocks back until it fits.
    while (seq.status == SequenceStatus::Running && !kv_.can_append_slots(seq.id, num_new_tokens)) preempt_newest(out);
    if (seq.status != SequenceStatus::Running) break;  // it was the newest: nothing after it
    std::ranges::move(kv_.append_slots(seq.id, num_new_tokens), std::back_inserter(out.block_copies));
    out.scheduled.push_back({.seq_id = seq.id,
                             .num_computed_tokens = seq.num_computed_tokens,
                             .num_new_tokens = num_new_tokens,
                             .needs_logits = seq.num_computed_tokens + num_new_tokens == seq.num_tokens()});
    budget = after;
  }
}

// Waiting sequences in queue order while a sequence slot, batch tokens and blocks remain. A
// sequence that scores its prompt reads nothing from the prefix cache: every prompt
// position needs its logits, so all are computed (its full blocks still join the cache).
void Scheduler::admit_waiting(SchedulerOutput& out, StepBudget& budget) {
  while (!waiting_.empty() && budget.tokens > 0 && std::ssize(running_) < config_.max_num_seqs) {
    Sequence& seq = at(waiting_.front());
    if (const std::optional<std::string> reason = why_never_fits(seq)) {
      waiting_.pop_front();
      auto node = sequences_.extract(seq.id);
      out.rejected.push_back({.sequence = std::move(node.mapped()), .reason = *reason});
      ++counters_.num_rejected;
      continue;
    }
    PrefixMatch match = kv_.match_prefix(seq.scores_prompt ? std::span<const TokenId>() : std::span(seq.token_ids));
    if (match.next_block_in_flight) break;  // share the block a running sequence is computing
    StepBudget after = budget;
    const auto chunk = [&](const PrefixMatch& m) {
      after = budget;
      return take_chunk(seq, m.num_cached_tokens, std::min(seq.num_tokens() - m.num_cached_tokens, budget.tokens),
                        after);
    };
    int32_t num_new_tokens = chunk(match);
    if (num_new_tokens == 0) break;  // no prompt rows left this step
    if (!kv_.can_allocate(match, num_new_tokens) && running_.empty() && match.partial_block) {
      // Alone, it fits the pool (fits_alone), but not beside the block it would copy from:
      // compute those tokens instead. (With others running, waiting frees blocks.)
      match = kv_.without_partial(match, seq.token_ids);
      num_new_tokens = chunk(match);
    }
    if (!kv_.can_allocate(match, num_new_tokens)) break;
    std::ranges::move(kv_.allocate(seq.id, seq.token_ids, match, num_new_tokens), std::back_inserter(out.block_copies));
    if (seq.num_preemptions == 0)
      seq.num_cached_prompt_tokens = std::min(match.num_cached_tokens, seq.num_prompt_tokens);
    seq.num_computed_tokens = match.num_cached_tokens;
    seq.status = SequenceStatus::Running;
    waiting_.pop_front();
    running_.push_back(seq.id);
    out.scheduled.push_back({.seq_id = seq.id,
                             .num_computed_tokens = seq.num_computed_tokens,
                             .num_new_tokens = num_new_tokens,
                             .needs_logits = seq.num_computed_tokens + num_new_tokens == seq.num_tokens()});
    budget = after;
  }
}

// The StepBatch of the scheduled chunks: new tokens of each sequence, their positions and
// slots, and the rows that need logits.
//   sequence s computes positions [c, c + n): token_ids[c..c+n) of the sequence;
//   slot of position p = make_slot(table[p / block_size], p % block_size, block_size)
void Scheduler::build_step_batch(SchedulerOutput& out) const {
  StepBatch& batch = out.batch;
  const int32_t block_size = kv_.block_size();
  batch.block_size = block_size;
  batch.num_seqs = static_cast<int32_t>(out.scheduled.size());
  for (const ScheduledSequence& s : out.scheduled)
    batch.max_blocks_per_seq =
        std::max<int32_t>(batch.max_blocks_per_seq, static_cast<int32_t>(kv_.block_table(s.seq_id).size()));
  const auto table_size = static_cast<std::size_t>(batch.num_seqs * batch.max_blocks_per_seq);
  batch.block_tables.assign(table_size, 0);
  batch.window_kinds.resize(static_cast<std::size_t>(kv_.num_kinds() - 1));
  for (KindTables& kind : batch.window_kinds) kind.block_tables.assign(table_size, 0);
  batch.query_start.push_back(0);
  // Kind k's table row and slot mapping (kind 0's in the batch's own fields).
  const auto tables_of = [&](KvKindId kind) -> std::vector<int32_t>& {
    return kind == 0 ? batch.block_tables : batch.window_kinds[static_cast<std::size_t>(kind) - 1].block_tables;
  };
  const auto slots_of = [&](KvKindId kind) -> std::vector<int64_t>& {
    return kind == 0 ? batch.slot_mapping : batch.window_kinds[static_cast<std::size_t>(kind) - 1].slot_mapping;
  };
  for (std::size_t i = 0; i < out.scheduled.size(); ++i) {
    const ScheduledSequence& s = out.scheduled[i];
    const Sequence& seq = sequences_.at(s.seq_id);
    for (KvKindId kind = 0; kind < kv_.num_kinds(); ++kind) {
      const std::span<const BlockId> table = kv_.block_table(s.seq_id, kind);
      std::copy(table.begin(), table.end(),
                tables_of(kind).begin() + static_cast<std::ptrdiff_t>(i * batch.max_blocks_per_seq));
      for (int32_t p = s.num_computed_tokens; p < s.num_computed_tokens + s.num_new_tokens; ++p)
        slots_of(kind).push_back(
            make_slot(table[static_cast<std::size_t>(p / block_size)], p % block_size, block_size));
    }
    for (int32_t p = s.num_computed_tokens; p < s.num_computed_tokens + s.num_new_tokens; ++p) {
      batch.token_ids.push_back(seq.token_ids[static_cast<std::size_t>(p)]);
      batch.positions.push_back(p);
    }
    batch.query_start.push_back(static_cast<int32_t>(batch.token_ids.size()));
    batch.context_lens.push_back(s.num_computed_tokens + s.num_new_tokens);
    add_logits_rows(out.scheduled[i], seq, batch);
    if (s.num_computed_tokens < seq.num_prompt_tokens) out.computes_prompt = true;
  }
  batch.num_tokens = static_cast<int32_t>(batch.token_ids.size());
}

// The chunk's logits rows (its tokens are the last ones of the batch so far):
//   chunk positions  c .. c+n-1      scored: c .. min(c+n, P-1)-1    last: c+n-1 when needs_logits
void Scheduler::add_logits_rows(ScheduledSequence& s, const Sequence& seq, StepBatch& batch) const {
  const auto first_token = static_cast<int32_t>(batch.token_ids.size()) - s.num_new_tokens;
  s.first_logits_row = static_cast<int32_t>(batch.logits_rows.size());
  s.num_prompt_logits_rows = num_scored_positions(seq, s.num_computed_tokens, s.num_new_tokens);
  for (int32_t j = 0; j < s.num_prompt_logits_rows; ++j) batch.logits_rows.push_back(first_token + j);
  if (s.needs_logits) batch.logits_rows.push_back(first_token + s.num_new_tokens - 1);
}

// Preemption by recompute: the newest running sequence frees its blocks and goes to the
// front of the waiting queue (several in one step keep their order: older first).
void Scheduler::preempt_newest(SchedulerOutput& out) {
  PG_CHECK(!running_.empty(), "preemption with nothing running");
  Sequence& victim = at(running_.back());
  running_.pop_back();
  kv_.free(victim.id);
  victim.num_computed_before_preemption = std::max(victim.num_computed_before_preemption, victim.num_computed_tokens);
  victim.num_computed_tokens = 0;
  victim.status = SequenceStatus::Waiting;
  ++victim.num_preemptions;
  waiting_.push_front(victim.id);
  out.preempted.push_back(victim.id);
  ++counters_.num_preemptions;
}

void Scheduler::on_step_done(const SchedulerOutput& out) {
  kv_.release_copy_sources();
  for (const ScheduledSequence& s : out.scheduled) {
    Sequence& seq = at(s.seq_id);
    PG_CHECK(seq.status == SequenceStatus::Running && seq.num_computed_tokens == s.num_computed_tokens,
             "sequence {} changed between schedule() and on_step_done()", s.seq_id);
    const int32_t begin = s.num_computed_tokens;
    const int32_t end = begin + s.num_new_tokens;
    counters_.num_computed_tokens += s.num_new_tokens;
    counters_.num_computed_prompt_tokens += std::max(0, std::min(end, seq.num_prompt_tokens) - begin);
    counters_.num_recomputed_tokens += std::max(0, std::min(end, seq.num_computed_before_preemption) - begin);
    seq.num_computed_tokens = end;
    kv_.commit_full_blocks(seq.id, seq.token_ids, seq.num_computed_tokens);
  }
}

void Scheduler::append_token(uint64_t seq_id, TokenId token) {
  Sequence& seq = at(seq_id);
  PG_CHECK(seq.status == SequenceStatus::Running, "append to sequence {} that is not running", seq_id);
  seq.token_ids.push_back(token);
}

void Scheduler::set_token(uint64_t seq_id, int32_t position, TokenId token) {
  Sequence& seq = at(seq_id);
  PG_CHECK(position >= seq.num_computed_tokens && position < seq.num_tokens(),
           "set token {} of sequence {}: it has {} tokens, {} computed", position, seq_id, seq.num_tokens(),
           seq.num_computed_tokens);
  seq.token_ids[static_cast<std::size_t>(position)] = token;
}

void Scheduler::fork(uint64_t parent_id, Sequence child) {
  const Sequence& parent = at(parent_id);
  PG_CHECK(parent.status == SequenceStatus::Running, "fork of sequence {} that is not running", parent_id);
  PG_CHECK(child.num_tokens() > parent.num_computed_tokens &&
               std::equal(parent.token_ids.begin(), parent.token_ids.begin() + parent.num_computed_tokens,
                          child.token_ids.begin()),
           "fork child {} does not continue parent {}'s computed tokens", child.id, parent_id);
  child.num_prompt_tokens = parent.num_prompt_tokens;
  child.num_computed_tokens = parent.num_computed_tokens;
  child.num_cached_prompt_tokens = parent.num_cached_prompt_tokens;
  child.status = SequenceStatus::Running;
  child.arrival_order = parent.arrival_order;
  const uint64_t id = child.id;
  kv_.fork(parent_id, id);
  PG_CHECK(sequences_.emplace(id, std::move(child)).second, "fork into existing sequence id {}", id);
  running_.push_back(id);
}

Sequence Scheduler::finish(uint64_t seq_id) {
  const auto it = std::ranges::find(running_, seq_id);
  PG_CHECK(it != running_.end(), "finish of sequence {} that is not running", seq_id);
  running_.erase(it);
  kv_.free(seq_id);
  Sequence seq = std::move(sequences_.extract(seq_id).mapped());
  seq.status = SequenceStatus::Finished;
  return seq;
}

}  // namespace pagedgen
