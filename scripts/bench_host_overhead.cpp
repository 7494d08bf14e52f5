// Benchmark (not a test) of the engine's host work per step, on a machine without a GPU: the
// real Engine over the GPU decode workload's shape (scripts/make-gpu-workload.py: 8
// documents of 970 tokens x 32 questions of 15, greedy, ignore_eos, 128 new tokens; batch
// 256, block size 16, 8192 tokens per step, vocabulary 128,256; no tokenizer, so samples end
// at max_tokens) on backends that run no model:
//   ids           hands back token ids, as the CUDA backend's device sampler does, each step
//                 waited for before the next is prepared (--no-overlap);
//   ids+overlap   the same with the engine's overlap: step N+1 is scheduled and submitted
//                 before step N's ids are applied;
//   logits        the old path, the baseline: writes rows x vocab float32 logits into a host
//                 buffer (what the CUDA backend copied to the host before it sampled on the
//                 device) and samples every row with the host Sampler (HostSampling, the CPU
//                 backend's step), without the overlap.
// With --device-us D the two ids paths run on a modelled device instead: a thread that
// takes D microseconds per step, one step after the other, as a GPU's stream does, and
// records how long it sat idle waiting for the host between steps (the host time on the
// critical path). Without it the ids come back at once and the host does all the work.
// Prints host microseconds per step by phase (Engine::last_step_timings), prefill steps
// (any chunk computing prompt positions) apart from decode steps, the ratios of the decode
// figures, and a JSON line.
//   bench_host_overhead [--repeats N] [--device-us D]   the ids paths run N times (default 3),
//                                       the fastest decode kept; the logits path runs once
#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend/host_sampling.h"
#include "backend/logits_backend.h"
#include "engine/engine.h"

using namespace pagedgen;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr int64_t kVocab = 128256;
constexpr int32_t kDocuments = 8;
constexpr int32_t kQuestions = 32;  // per document
constexpr int32_t kDocumentTokens = 970;
constexpr int32_t kQuestionTokens = 15;
constexpr int32_t kNewTokens = 128;
constexpr int32_t kBlockSize = 16;
constexpr int32_t kBatch = kDocuments * kQuestions;  // every request runs at once: 256
constexpr int32_t kMaxBatchTokens = 8192;
constexpr int64_t kMaxModelLen = 2048;

// splitmix64's finalizer: a well-mixed 64-bit value of a counter.
uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
TokenId token_of(uint64_t key) { return static_cast<TokenId>(mix(key) % static_cast<uint64_t>(kVocab)); }

// Request r = document d's tokens, then question r's: the 32 requests of a document share
// its 970 tokens (60 full blocks and a partial one).
std::vector<PreparedRequest> workload() {
  std::vector<PreparedRequest> requests;
  for (uint64_t d = 0; d < kDocuments; ++d)
    for (int32_t q = 0; q < kQuestions; ++q) {
      PreparedRequest r;
      r.index = requests.size();
      r.seed_key = std::to_string(r.index);
      for (uint64_t i = 0; i < kDocumentTokens; ++i) r.prompt_ids.push_back(token_of(d << 32 | i));
      for (uint64_t i = 0; i < kQuestionTokens; ++i) r.prompt_ids.push_back(token_of((r.index + 1) << 48 | i));
      r.sampling.temperature = 0.0;
      r.sampling.max_tokens = kNewTokens;
      r.sampling.ignore_eos = true;
      requests.push_back(std::move(r));
    }
  return requests;
}

EngineConfig engine_config(bool overlap) {
  const int32_t blocks_per_seq = (kDocumentTokens + kQuestionTokens + kNewTokens + kBlockSize - 1) / kBlockSize;
  EngineConfig config;
  config.block_size = kBlockSize;
  config.num_blocks = kBatch * blocks_per_seq + 64;  // room for all, unshared: no preemption
  config.max_num_seqs = kBatch;
  config.max_batch_tokens = kMaxBatchTokens;
  config.max_model_len = kMaxModelLen;
  config.overlap = overlap;
  return config;
}

// What a backend saw of the last step submitted, for the tables: the sequences, the time it
// took to write logits (none on the ids paths), and how long the modelled device waited
// for it. Taken and reset after every step.
struct StepProbe {
  int32_t num_seqs = 0;
  double logits_seconds = 0;
  double device_idle_seconds = 0;
};

// Both paths' backend: it runs no model and holds no K/V (no KV memory to size, nothing to
// copy). On the ids path step() hands back ids; on the logits path it is
// the CPU backend's step (HostSampling), which calls forward() below and samples each row
// on the host.
class NoModelBackend final : public LogitsBackend {
 public:
  enum class Path { ids, logits };
  NoModelBackend(Path path, StepProbe& probe) : path_(path), probe_(probe) {}

  std::string name() const override { return path_ == Path::ids ? "ids" : "logits"; }
  // Llama-3-8B's K/V per token in bfloat16, for the stats only.
  std::size_t kv_bytes_per_block(std::size_t block_size) const override { return 131072 * block_size; }
  void allocate_kv_pool(std::size_t, std::size_t) override {}
  void copy_blocks(std::span<const BlockCopy>) override {}
  int64_t vocab_size() const override { return kVocab; }

  std::vector<SampledToken> step(const StepBatch& batch, const SamplingBatch& sampling) override {
    probe_.num_seqs = batch.num_seqs;
    if (path_ == Path::logits) return host_sampling_.step(*this, batch, sampling);
    std::vector<SampledToken> tokens;
    tokens.reserve(sampling.rows.size());
    for (std::size_t i = 0; i < sampling.rows.size(); ++i) tokens.push_back({token_of(num_sampled_++), std::nullopt});
    return tokens;
  }

  // logits: (batch.logits_rows, kVocab), pseudo-random in [-8, 8), a new row every time.
  void forward(const StepBatch& batch, std::span<float> logits) override {
    const auto start = Clock::now();
    for (std::size_t r = 0; r < batch.logits_rows.size(); ++r)
      fill_row(logits.subspan(r * kVocab, kVocab), static_cast<uint32_t>(mix(num_sampled_++)));
    probe_.logits_seconds = seconds_since(start);
  }

 private:
  // A counter hash per element (it vectorizes, as a copy's stream of stores does).
  static void fill_row(std::span<float> row, uint32_t seed) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      uint32_t h = (static_cast<uint32_t>(i) ^ seed) * 0x9e3779b1u;
      h = (h ^ (h >> 15)) * 0x85ebca77u;
      h ^= h >> 13;
      row[i] = static_cast<float>(static_cast<int32_t>(h)) * 0x1p-28f;
    }
  }

  Path path_;
  HostSampling host_sampling_;  // the logits path's step
  StepProbe& probe_;
  uint64_t num_sampled_ = 0;  // ids handed back, or logits rows written
};

// The ids path on a modelled device: a thread runs each submitted step for a fixed time,
// in submission order, and hands its ids back; collect() waits for them. The device's idle
// time before a step (from the end of the one before, or from the start of the run, to
// the step's submission) is the host's time on the critical path.
class ModelledDeviceBackend final : public Backend {
 public:
  ModelledDeviceBackend(std::chrono::microseconds step_time, StepProbe& probe)
      : step_time_(step_time), probe_(probe), device_([this] { run_device(); }) {}
  ~ModelledDeviceBackend() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    device_.join();
  }

  std::string name() const override { return "ids"; }
  std::size_t kv_bytes_per_block(std::size_t block_size) const override { return 131072 * block_size; }
  void allocate_kv_pool(std::size_t, std::size_t) override {}
  void copy_blocks(std::span<const BlockCopy>) override {}
  std::vector<SampledToken> step(const StepBatch& batch, const SamplingBatch& sampling) override {
    submit(batch, sampling, {});
    return collect();
  }

  void submit(const StepBatch& batch, const SamplingBatch& sampling, std::span<const OverlapToken>) override {
    probe_.num_seqs = batch.num_seqs;
    std::lock_guard lock(mutex_);
    queued_.push_back({sampling.rows.size(), Clock::now()});
    changed_.notify_all();
  }
  std::vector<SampledToken> collect() override {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !done_.empty(); });
    Done done = std::move(done_.front());
    done_.pop_front();
    probe_.device_idle_seconds += done.idle_seconds;  // the step collected: the one the engine just timed
    return std::move(done.tokens);
  }

 private:
  struct Queued {
    std::size_t num_rows;
    Clock::time_point submitted;
  };
  struct Done {
    std::vector<SampledToken> tokens;
    double idle_seconds;
  };

  void run_device() {
    Clock::time_point free_at = Clock::now();
    std::unique_lock lock(mutex_);
    while (true) {
      changed_.wait(lock, [&] { return stopping_ || !queued_.empty(); });
      if (stopping_) return;
      const Queued q = queued_.front();
      queued_.pop_front();
      lock.unlock();
      const Clock::time_point start = std::max(free_at, q.submitted);
      const double idle = std::chrono::duration<double>(start - free_at).count();
      free_at = start + step_time_;
      std::this_thread::sleep_until(free_at);
      std::vector<SampledToken> tokens;
      tokens.reserve(q.num_rows);
      for (std::size_t i = 0; i < q.num_rows; ++i) tokens.push_back({token_of(num_sampled_++), std::nullopt});
      lock.lock();
      done_.push_back({std::move(tokens), idle});
      changed_.notify_all();
    }
  }

  std::chrono::microseconds step_time_;
  StepProbe& probe_;
  uint64_t num_sampled_ = 0;  // device thread only
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Queued> queued_;
  std::deque<Done> done_;
  bool stopping_ = false;
  std::thread device_;  // last: starts once the rest is built
};

// Sums of host seconds over the steps of one kind.
struct Phases {
  int64_t num_steps = 0;
  int64_t num_seqs = 0;
  double schedule = 0, sampling_batch = 0, logits = 0, sampling = 0, wait = 0, step_done = 0, output = 0, total = 0,
         device_idle = 0;

  void add(const StepTimings& t, const StepProbe& probe, double total_seconds) {
    ++num_steps;
    num_seqs += probe.num_seqs;
    schedule += t.schedule_seconds;
    sampling_batch += t.sampling_batch_seconds;
    logits += probe.logits_seconds;
    sampling += t.submit_seconds - probe.logits_seconds;
    wait += t.wait_seconds;
    step_done += t.step_done_seconds;
    output += t.output_seconds + t.overlap_output_seconds;
    total += total_seconds;
    device_idle += probe.device_idle_seconds;
  }
  double us_per_step(double seconds) const { return num_steps ? seconds * 1e6 / static_cast<double>(num_steps) : 0; }
  double host() const { return total - wait; }  // the engine's own work
};

struct Run {
  std::string path;
  bool modelled_device = false;
  double plan_seconds = 0;  // Engine::add_requests
  Phases prefill, decode;
  int64_t num_generated_tokens = 0;
  int64_t num_steps = 0;
  double wall_seconds = 0;  // all steps
};

Run run(const std::string& path, Backend& backend, StepProbe& probe, bool overlap) {
  Engine engine(engine_config(overlap), backend, nullptr);
  Run result;
  result.path = path;
  std::vector<PreparedRequest> requests = workload();
  const auto start = Clock::now();
  engine.add_requests(std::move(requests));
  result.plan_seconds = seconds_since(start);
  const auto steps_start = Clock::now();
  while (engine.has_unfinished()) {
    const auto step_start = Clock::now();
    engine.step();
    const double seconds = seconds_since(step_start);
    const StepTimings& t = engine.last_step_timings();
    (t.computes_prompt ? result.prefill : result.decode).add(t, std::exchange(probe, StepProbe{}), seconds);
  }
  result.wall_seconds = seconds_since(steps_start);
  result.num_generated_tokens = engine.stats().num_generated_tokens;
  result.num_steps = engine.stats().num_steps;
  return result;
}

// The fastest of `repeats` runs of an ids path (by decode wall time).
Run fastest_ids_run(int repeats, bool overlap, int64_t device_us) {
  Run best;
  for (int i = 0; i < repeats; ++i) {
    StepProbe probe;
    std::unique_ptr<Backend> backend;
    if (device_us > 0)
      backend = std::make_unique<ModelledDeviceBackend>(std::chrono::microseconds(device_us), probe);
    else
      backend = std::make_unique<NoModelBackend>(NoModelBackend::Path::ids, probe);
    Run r = run(overlap ? "ids+overlap" : "ids", *backend, probe, overlap);
    r.modelled_device = device_us > 0;
    if (i == 0 || r.decode.total < best.decode.total) best = std::move(r);
  }
  return best;
}

void print_row(const Run& r, const char* kind, const Phases& p) {
  fmt::print(
      "{:<12} {:<8} {:>5} {:>6.0f} {:>11.1f} {:>10.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} "
      "{:>10.1f} {:>9}\n",
      r.path, kind, p.num_steps, p.num_steps ? static_cast<double>(p.num_seqs) / static_cast<double>(p.num_steps) : 0.0,
      p.us_per_step(p.schedule), p.us_per_step(p.sampling_batch), p.us_per_step(p.logits), p.us_per_step(p.sampling),
      p.us_per_step(p.step_done), p.us_per_step(p.output), p.us_per_step(p.host()), p.us_per_step(p.wait),
      p.us_per_step(p.total),
      r.modelled_device ? fmt::format("{:.1f}", p.us_per_step(p.device_idle)) : std::string("-"));
}

void print_table(const std::vector<Run>& runs, int64_t device_us) {
  fmt::print(
      "host microseconds per step (mean); batch {}, vocabulary {}, block size {}, {} x {} prompts of {} "
      "tokens, {} new tokens, greedy; ids paths on {}\n",
      kBatch, kVocab, kBlockSize, kDocuments, kQuestions, kDocumentTokens + kQuestionTokens, kNewTokens,
      device_us > 0 ? fmt::format("a modelled device of {} us per step", device_us)
                    : std::string("no device (ids at once)"));
  fmt::print("{:<12} {:<8} {:>5} {:>6} {:>11} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9}\n", "path",
             "kind", "steps", "seqs", "sched+batch", "samp.batch", "logits", "sampling", "step done", "output", "host",
             "wait", "wall", "dev.idle");
  for (const Run& r : runs) {
    print_row(r, "prefill", r.prefill);
    print_row(r, "decode", r.decode);
  }
  fmt::print(
      "  sched+batch  Scheduler::schedule(), which also builds the StepBatch (one call, not split)\n"
      "  samp.batch   OutputProcessor::sampling_batch (random draws) and overlap tokens, with reject and note_starts\n"
      "  logits       logits path: rows x {} float32 written to a host buffer (the device-to-host copy)\n"
      "  sampling     Backend::copy_blocks + submit: logits path the host Sampler over every row; ids paths handing\n"
      "               the step over (at once without a device)\n"
      "  step done    Scheduler::on_step_done + the step's KV memory figures (EngineStats snapshot)\n"
      "  output       OutputProcessor::apply / start_overlap, and finish_overlap (the step before's ids)\n"
      "  host         the engine's own work: wall minus wait\n"
      "  wait         Backend::collect, waiting for ids\n"
      "  wall         Engine::step() wall time\n"
      "  dev.idle     modelled device: its idle time before the step, waiting for the host (critical path)\n",
      kVocab);
}

std::string phases_json(const Phases& p) {
  return fmt::format(
      "{{\"steps\": {}, \"schedule_us\": {:.1f}, \"sampling_batch_us\": {:.1f}, \"logits_us\": {:.1f}, "
      "\"sampling_us\": {:.1f}, \"step_done_us\": {:.1f}, \"output_us\": {:.1f}, \"host_us\": {:.1f}, "
      "\"wait_us\": {:.1f}, \"wall_us\": {:.1f}, \"device_idle_us\": {:.1f}}}",
      p.num_steps, p.us_per_step(p.schedule), p.us_per_step(p.sampling_batch), p.us_per_step(p.logits),
      p.us_per_step(p.sampling), p.us_per_step(p.step_done), p.us_per_step(p.output), p.us_per_step(p.host()),
      p.us_per_step(p.wait), p.us_per_step(p.total), p.us_per_step(p.device_idle));
}

void print_summary(const Run& ids, const Run& overlap, const Run& logits, int64_t device_us) {
  const double ids_us = ids.decode.us_per_step(ids.decode.host());
  const double overlap_us = overlap.decode.us_per_step(overlap.decode.host());
  const double logits_us = logits.decode.us_per_step(logits.decode.host());
  fmt::print(
      "plan (add_requests): ids {:.1f} ms, ids+overlap {:.1f} ms, logits {:.1f} ms; generated tokens: ids {}, "
      "ids+overlap {}, logits {}; steps: {}, {}, {}\n",
      ids.plan_seconds * 1e3, overlap.plan_seconds * 1e3, logits.plan_seconds * 1e3, ids.num_generated_tokens,
      overlap.num_generated_tokens, logits.num_generated_tokens, ids.num_steps, overlap.num_steps, logits.num_steps);
  fmt::print(
      "decode step, host time at batch {}: ids {:.1f} us, ids+overlap {:.1f} us, logits (baseline) {:.1f} us: "
      "{:.1f}x / {:.1f}x less; target <= 1000 us: {}\n",
      kBatch, ids_us, overlap_us, logits_us, logits_us / ids_us, logits_us / overlap_us,
      std::max(ids_us, overlap_us) <= 1000.0 ? "met" : "NOT met");
  if (device_us > 0) {
    const double ids_wall = ids.decode.us_per_step(ids.decode.total);
    const double overlap_wall = overlap.decode.us_per_step(overlap.decode.total);
    fmt::print(
        "decode step on the modelled {} us device: wall ids {:.1f} us ({:.3f}x the device), ids+overlap {:.1f} "
        "us ({:.3f}x); device idle per step {:.1f} us -> {:.1f} us; whole run {:.3f} s -> {:.3f} s\n",
        device_us, ids_wall, ids_wall / static_cast<double>(device_us), overlap_wall,
        overlap_wall / static_cast<double>(device_us), ids.decode.us_per_step(ids.decode.device_idle),
        overlap.decode.us_per_step(overlap.decode.device_idle), ids.wall_seconds, overlap.wall_seconds);
  }
  fmt::print(
      "{{\"bench\": \"host_overhead\", \"batch\": {}, \"vocab\": {}, \"device_us\": {}, \"ids\": "
      "{{\"prefill\": {}, \"decode\": {}}}, \"ids_overlap\": {{\"prefill\": {}, \"decode\": {}}}, "
      "\"logits\": {{\"prefill\": {}, \"decode\": {}}}, \"decode_ratio\": {:.2f}}}\n",
      kBatch, kVocab, device_us, phases_json(ids.prefill), phases_json(ids.decode), phases_json(overlap.prefill),
      phases_json(overlap.decode), phases_json(logits.prefill), phases_json(logits.decode), logits_us / ids_us);
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 3;
  int64_t device_us = 0;
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--repeats" && i + 1 < argc)
      repeats = std::atoi(argv[++i]);
    else if (arg == "--device-us" && i + 1 < argc)
      device_us = std::atoll(argv[++i]);
    else
      ok = false;
  }
  if (!ok || repeats < 1 || device_us < 0) {
    fmt::print(stderr, "usage: bench_host_overhead [--repeats N] [--device-us D]\n");
    return 2;
  }
  const Run ids = fastest_ids_run(repeats, false, device_us);
  const Run overlap = fastest_ids_run(repeats, true, device_us);
  StepProbe probe;
  NoModelBackend logits_backend(NoModelBackend::Path::logits, probe);
  const Run logits = run("logits", logits_backend, probe, false);
  print_table({ids, overlap, logits}, device_us);
  print_summary(ids, overlap, logits, device_us);
  return 0;
}
