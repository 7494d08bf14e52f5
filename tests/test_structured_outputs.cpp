// Structured outputs through the engine: the output processor's grammar matchers, the masks
// it hands the host sampler, and the records that come out, on a byte-level test tokenizer
// (every byte, plus tokens that cross JSON syntax: "{\"", "\":", "},{", ...) and a backend
// whose logits are a hash of each row's own token and position (so a mask is all that
// keeps its text JSON). Every finished record is checked by simdjson and by hand against
// its schema, cut records are prefixes of a value, and the files are the same at every
// block size, with sharing off, under preemption and on 1 or 2 sampling threads. Also: the
// grammar cache, and the error record of a backend that applies no masks.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu_thread_pool.h"
#include "backend/host_sampling.h"
#include "backend/logits_backend.h"
#include "engine/engine.h"
#include "engine/grammar_cache.h"
#include "engine/run_to_completion.h"
#include "grammar/grammar_matcher.h"
#include "io/json_schema_format.h"
#include "job/prompt_builder.h"
#include "tokenizer/tokenizer.h"

using namespace pagedgen;

namespace {

constexpr TokenId kEosId = 256;
// Tokens past the 256 bytes and the end-of-generation id: JSON pieces that span syntax.
const std::vector<std::string> kPieces = {"{\"",  "\":", "\",\"", "\":\"", "},{",  "\"}", "true", "false",
                                          "null", "12",  "]}",    ",\"",   "\":[", "bc",  "}"};

// Token i < 256 writes byte i (but `missing_byte`, which writes nothing, like a control
// token); 256 is end-of-generation; then kPieces.
class TestTokenizer final : public Tokenizer {
 public:
  explicit TestTokenizer(std::optional<char> missing_byte = std::nullopt) : missing_byte_(missing_byte) {
    special_.eos = kEosId;
    special_.end_of_generation = {kEosId};
  }
  std::vector<TokenId> encode(std::string_view text, bool) const override {
    std::vector<TokenId> ids;
    for (const char c : text) ids.push_back(static_cast<uint8_t>(c));
    return ids;
  }
  std::string token_bytes(TokenId id, bool render_special) const override {
    if (id < kEosId) return missing_byte_ == static_cast<char>(id) ? "" : std::string(1, static_cast<char>(id));
    if (id == kEosId) return render_special ? "<eos>" : "";
    return kPieces[static_cast<size_t>(id - kEosId - 1)];
  }
  std::string piece(TokenId id) const override { return token_bytes(id, true); }
  int32_t vocab_size() const override { return kEosId + 1 + static_cast<int32_t>(kPieces.size()); }
  std::optional<TokenId> find_token(std::string_view text) const override {
    return text == "<eos>" ? std::optional<TokenId>(kEosId) : std::nullopt;
  }

 private:
  std::optional<char> missing_byte_;
};

uint64_t fmix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

// Logits from each row's own last token and position: the same wherever and with whatever
// the row is batched. Pieces weigh a little more than bytes, so they are picked often.
class HashLogitsBackend final : public LogitsBackend {
 public:
  HashLogitsBackend(int32_t vocab_size, cpu::CpuThreadPool* pool) : vocab_size_(vocab_size), sampling_(pool) {}
  std::string name() const override { return "hash"; }
  std::size_t kv_bytes_per_block(std::size_t block_size) const override { return block_size; }
  void allocate_kv_pool(std::size_t, std::size_t) override {}
  void copy_blocks(std::span<const BlockCopy>) override {}
  bool applies_token_masks() const override { return true; }
  int64_t vocab_size() const override { return vocab_size_; }
  void forward(const StepBatch& batch, std::span<float> logits) override {
    for (std::size_t r = 0; r < batch.logits_rows.size(); ++r) {
      const auto t = static_cast<std::size_t>(batch.logits_rows[r]);
      const uint64_t key =
          (static_cast<uint64_t>(batch.token_ids[t]) << 32) ^ static_cast<uint64_t>(batch.positions[t]);
      for (int32_t v = 0; v < vocab_size_; ++v) {
        const uint64_t h = fmix64(key * 1315423911u + static_cast<uint64_t>(v));
        logits[r * static_cast<std::size_t>(vocab_size_) + static_cast<std::size_t>(v)] =
            static_cast<float>(h % 4000) / 1000.0f + (v > kEosId ? 2.0f : 0.0f);
      }
    }
  }
  std::vector<SampledToken> step(const StepBatch& batch, const SamplingBatch& sampling) override {
    return sampling_.step(*this, batch, sampling);
  }

 private:
  int32_t vocab_size_;
  HostSampling sampling_;
};

// Its step never sees a mask: it only says it cannot apply one.
class MasklessBackend final : public Backend {
 public:
  std::string name() const override { return "maskless"; }
  std::size_t kv_bytes_per_block(std::size_t block_size) const override { return block_size; }
  void allocate_kv_pool(std::size_t, std::size_t) override {}
  void copy_blocks(std::span<const BlockCopy>) override {}
  std::vector<SampledToken> step(const StepBatch&, const SamplingBatch& sampling) override {
    return std::vector<SampledToken>(sampling.rows.size(), SampledToken{TokenId{'x'}, std::nullopt});
  }
};

// A bounded record (every value fits in 64 tokens) and a bounded root integer.
const char* kRecordSchema = R"({"type": "object", "properties": {
    "id": {"type": "integer", "minimum": 0, "maximum": 999},
    "tag": {"enum": ["a", "bc"]},
    "ok": {"type": "boolean"},
    "xs": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "maxItems": 3}},
  "required": ["id", "tag"], "additionalProperties": false})";
const char* kIntegerSchema = R"({"type": "integer", "minimum": 10, "maximum": 20})";

enum class Kind { kRecord, kInteger, kObject, kText };

ResponseFormat response_format_of(Kind kind) {
  switch (kind) {
    case Kind::kRecord:
      return json_schema_format(kRecordSchema);
    case Kind::kInteger:
      return json_schema_format(kIntegerSchema);
    case Kind::kObject:
      return ResponseFormat{ResponseFormat::Type::kJsonObject, {}};
    case Kind::kText:
      return {};
  }
  return {};
}

// Whether `text` is a value of its kind (checked by hand on simdjson's reading, not by
// the grammar engine), keys in schema order.
bool is_valid(Kind kind, const std::string& text) {
  simdjson::dom::parser parser;
  simdjson::dom::element value;
  if (parser.parse(text).get(value) != simdjson::SUCCESS) return false;
  switch (kind) {
    case Kind::kObject:
      return value.is_object();
    case Kind::kInteger: {
      int64_t n = 0;
      return value.get_int64().get(n) == simdjson::SUCCESS && n >= 10 && n <= 20;
    }
    case Kind::kRecord: {
      simdjson::dom::object object;
      if (value.get_object().get(object) != simdjson::SUCCESS) return false;
      const std::vector<std::string_view> order = {"id", "tag", "ok", "xs"};
      std::size_t next = 0;
      bool has_id = false, has_tag = false;
      for (const auto field : object) {
        while (next < order.size() && order[next] != field.key) ++next;
        if (next == order.size()) return false;  // unknown, repeated or out of order
        int64_t n = 0;
        std::string_view s;
        bool b = false;
        simdjson::dom::array xs;
        if (field.key == "id") {
          has_id = field.value.get_int64().get(n) == simdjson::SUCCESS && n >= 0 && n <= 999;
          if (!has_id) return false;
        } else if (field.key == "tag") {
          has_tag = field.value.get_string().get(s) == simdjson::SUCCESS && (s == "a" || s == "bc");
          if (!has_tag) return false;
        } else if (field.key == "ok") {
          if (field.value.get_bool().get(b) != simdjson::SUCCESS) return false;
        } else {
          if (field.value.get_array().get(xs) != simdjson::SUCCESS || xs.size() > 3) return false;
          for (const auto x : xs)
            if (x.get_int64().get(n) != simdjson::SUCCESS || n < 0 || n > 9) return false;
        }
        ++next;
      }
      return has_id && has_tag;
    }
    case Kind::kText:
      return true;
  }
  return false;
}

struct TestRequest {
  std::string prompt;
  Kind kind;
  double temperature;
  int32_t n;
  int32_t max_tokens;
};

// 24 requests: four kinds, greedy and sampled, n = 1 and 3, a shared prefix, a tight budget.
std::vector<TestRequest> test_requests() {
  std::vector<TestRequest> requests;
  const Kind kinds[] = {Kind::kRecord, Kind::kInteger, Kind::kObject, Kind::kText};
  for (int i = 0; i < 24; ++i) {
    const Kind kind = kinds[i % 4];
    requests.push_back({fmt::format("Shared context for every request. Request {} asks:", i), kind,
                        i % 3 == 0 ? 0.0 : 1.0, i % 5 == 1 ? 3 : 1, i == 6 ? 3 : 64});
  }
  return requests;
}

struct RunConfig {
  int32_t block_size = 16;
  int32_t num_blocks = 4096;
  bool prefix_sharing = true;
  std::size_t num_threads = 1;
};

// The records of one run, by request index.
std::map<uint64_t, RequestOutput> run_structured(const RunConfig& config, int64_t* preemptions = nullptr) {
  const TestTokenizer tokenizer;
  cpu::CpuThreadPool pool(config.num_threads);
  HashLogitsBackend backend(tokenizer.vocab_size(), &pool);
  Engine engine(EngineConfig{.block_size = config.block_size,
                             .num_blocks = config.num_blocks,
                             .max_num_seqs = 16,
                             .max_batch_tokens = 256,
                             .prefix_sharing = config.prefix_sharing,
                             .max_model_len = 1 << 20,
                             .run_seed = 9},
                backend, &tokenizer);
  const PromptBuilder builder(tokenizer, std::nullopt, "no template", 1 << 20);
  std::vector<PreparedRequest> prepared;
  const std::vector<TestRequest> requests = test_requests();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    Request request;
    request.index = i;
    request.seed_key = std::to_string(i);
    request.input = requests[i].prompt;
    request.sampling.temperature = requests[i].temperature;
    request.sampling.n = requests[i].n;
    request.sampling.max_tokens = requests[i].max_tokens;
    request.sampling.response_format = response_format_of(requests[i].kind);
    prepared.push_back(std::get<PreparedRequest>(builder.build(request)));
  }
  engine.add_requests(std::move(prepared));
  std::map<uint64_t, RequestOutput> records;
  for (OutputRecord& record : run_to_completion(engine)) {
    REQUIRE(std::holds_alternative<RequestOutput>(record));
    RequestOutput& output = std::get<RequestOutput>(record);
    records.emplace(output.index, std::move(output));
  }
  if (preemptions) *preemptions = engine.stats().preemptions;
  return records;
}

std::string describe_records(const std::map<uint64_t, RequestOutput>& records) {
  std::string out;
  for (const auto& [index, record] : records)
    for (const Completion& c : record.choices)
      out += fmt::format("{} {} {} {}\n", index, finish_reason_name(c.finish_reason), c.num_tokens, c.text);
  return out;
}

}  // namespace

TEST_CASE("constrained samples finish as valid JSON of their schema, or are cut by max_tokens as a prefix of one") {
  const std::map<uint64_t, RequestOutput> records = run_structured(RunConfig{});
  const std::vector<TestRequest> requests = test_requests();
  REQUIRE(records.size() == requests.size());
  MESSAGE(describe_records(records));
  const TestTokenizer tokenizer;
  GrammarCache grammars(tokenizer);
  int num_stopped = 0, num_cut = 0;
  for (const auto& [index, record] : records) {
    const TestRequest& request = requests[index];
    REQUIRE(record.choices.size() == static_cast<std::size_t>(request.n));
    for (const Completion& c : record.choices) {
      CAPTURE(index);
      CAPTURE(c.text);
      if (request.kind == Kind::kText) continue;
      // Only the value's own tokens: each of these values closes (nothing but the end may
      // follow its last token), which ends the sample at once, without an end token.
      CHECK(std::count(c.token_ids.begin(), c.token_ids.end(), kEosId) == 0);
      if (c.finish_reason == FinishReason::kStop) {
        ++num_stopped;
        CHECK(is_valid(request.kind, c.text));
      } else {
        ++num_cut;
        CHECK(c.num_tokens == request.max_tokens);
        CHECK_FALSE(is_valid(request.kind, c.text));
        // A prefix of a value: the grammar accepts every token, and the value is not complete.
        GrammarMatcher matcher(grammars.get(response_format_of(request.kind)));
        for (const TokenId id : c.token_ids) REQUIRE(matcher.accept_token(id));
        CHECK_FALSE(matcher.is_complete());
      }
    }
  }
  MESSAGE(num_stopped << " constrained samples finished, " << num_cut << " cut by max_tokens");
  CHECK(num_stopped >= 20);
  CHECK(num_cut >= 1);  // request 6's budget of 3 tokens cannot hold an object
}

TEST_CASE("structured outputs are the same at every block size, sharing off, under preemption, on 2 threads") {
  const std::string baseline = describe_records(run_structured(RunConfig{}));
  for (const int32_t block_size : {1, 4, 32}) {
    CAPTURE(block_size);
    CHECK(describe_records(run_structured(RunConfig{.block_size = block_size})) == baseline);
  }
  CHECK(describe_records(run_structured(RunConfig{.prefix_sharing = false})) == baseline);
  CHECK(describe_records(run_structured(RunConfig{.num_threads = 2})) == baseline);
  int64_t preemptions = 0;
  CHECK(describe_records(run_structured(RunConfig{.block_size = 4, .num_blocks = 60}, &preemptions)) == baseline);
  MESSAGE("preemptions with a 60-block pool: " << preemptions);
  CHECK(preemptions > 0);
}

TEST_CASE("the grammar cache compiles each format once and shares it") {
  const TestTokenizer tokenizer;
  GrammarCache grammars(tokenizer);
  const auto record = grammars.get(json_schema_format(kRecordSchema));
  CHECK(grammars.get(json_schema_format(kRecordSchema)) == record);
  CHECK(grammars.get(response_format_of(Kind::kObject)) == grammars.get(response_format_of(Kind::kObject)));
  CHECK(grammars.get(response_format_of(Kind::kObject)) != record);
  CHECK(grammars.num_grammars() == 2);
  CHECK(&record->trie() == &grammars.get(response_format_of(Kind::kObject))->trie());
  CHECK(record->vocabulary().size() == tokenizer.vocab_size());
}

TEST_CASE("a constrained line for a backend that applies no token masks is an unsupported_field record") {
  const TestTokenizer tokenizer;
  const MasklessBackend backend;
  REQUIRE_FALSE(backend.applies_token_masks());
  const PromptBuilder builder(tokenizer, std::nullopt, "no template", 1 << 20,
                              UnsupportedSampling{"structured outputs need the CPU", std::nullopt, std::nullopt});
  Request request;
  request.index = 4;
  request.input = std::string("p");
  CHECK(std::holds_alternative<PreparedRequest>(builder.build(request)));
  request.sampling.response_format = response_format_of(Kind::kObject);
  const auto built = builder.build(request);
  REQUIRE(std::holds_alternative<RequestError>(built));
  CHECK(std::get<RequestError>(built).code == "unsupported_field");
  CHECK(std::get<RequestError>(built).message == "structured outputs need the CPU");
  CHECK(std::get<RequestError>(built).index == 4);
}

TEST_CASE("a schema that needs a character no token writes ends its request with an error record, not a crash") {
  const TestTokenizer tokenizer('Q');
  cpu::CpuThreadPool pool(1);
  HashLogitsBackend backend(tokenizer.vocab_size(), &pool);
  Engine engine(EngineConfig{.block_size = 16, .num_blocks = 64, .max_model_len = 1 << 20}, backend, &tokenizer);
  PreparedRequest stuck;
  stuck.index = 0;
  stuck.seed_key = "0";
  stuck.prompt_ids = tokenizer.encode("say Q", false);
  stuck.sampling.response_format =
      json_schema_format(R"({"type": "object", "properties": {"a": {"const": "Q"}}, "required": ["a"]})");
  PreparedRequest fine = stuck;
  fine.index = 1;
  fine.sampling.response_format = json_schema_format(R"({"enum": ["R"]})");
  engine.add_requests({stuck, fine});
  std::map<uint64_t, OutputRecord> records;
  for (OutputRecord& record : run_to_completion(engine)) records.emplace(record_index(record), std::move(record));
  REQUIRE(records.size() == 2);
  REQUIRE(std::holds_alternative<RequestError>(records.at(0)));
  const RequestError& error = std::get<RequestError>(records.at(0));
  CHECK(error.code == "invalid_value");
  CAPTURE(error.message);
  CHECK(error.message.starts_with("response_format: no token of this model can write what the schema requires after "));
  CHECK(
      error.message.ends_with(" generated tokens (a character its vocabulary lacks); change the schema's enum, const "
                              "or property names"));
  REQUIRE(std::holds_alternative<RequestOutput>(records.at(1)));
  CHECK(std::get<RequestOutput>(records.at(1)).choices.at(0).text == "\"R\"");
}
