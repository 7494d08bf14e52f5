// Benchmark (not a test): time per step of structured outputs' token masks, over recorded
// token streams (valid documents of four schemas, tokenized as a model writes them), on
// the default model's vocabulary (49,152 tokens) and any others named with --vocab. One
// table and a JSON line per vocabulary, against the target (50 us of masking per step per
// sequence) and, in the same run, a baseline without the precomputed token classes: a
// walk of the whole token trie from the matcher's state at every step.
//
//   bench_grammar [--model FILE] [--vocab FILE.gguf]... [--passes N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "grammar/pda_state.h"
#include "grammar/token_bitmask.h"
#include "grammar/token_vocabulary.h"
#include "loader/default_model.h"
#include "loader/model_files.h"
#include "model/gguf.h"
#include "sample/response_format.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_loader.h"

namespace {

using namespace pagedgen;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct Workload {
  const char* name;
  ResponseFormat format;
  std::vector<const char*> documents;
};

ResponseFormat schema(const char* text) { return {ResponseFormat::Type::kJsonSchema, text}; }

// guided_choice's typical use: one label of 50, some sharing prefixes, some multi-byte.
ResponseFormat fifty_choices() {
  std::string list = R"(["positive","positively","negative","neutral","mixed","sarcastic","café","naïve","日本語")";
  for (int i = 0; i < 41; ++i) list += ",\"category " + std::to_string(i) + "\"";
  return {ResponseFormat::Type::kChoice, list + "]"};
}

// The target's schema shape first: an object with an array of objects, enums, integers, strings.
std::vector<Workload> workloads() {
  return {
      {"nested",
       schema(R"j({"type": "object", "properties": {
          "order_id": {"type": "integer", "minimum": 1},
          "customer": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 60},
                        "tier": {"enum": ["free", "pro", "enterprise"]}}, "required": ["name", "tier"]},
          "items": {"type": "array", "minItems": 1, "maxItems": 8, "items": {"type": "object", "properties": {
                     "sku": {"type": "string"}, "quantity": {"type": "integer", "minimum": 1, "maximum": 1000},
                     "color": {"enum": ["red", "green", "blue"]}, "note": {"type": "string"}},
                     "required": ["sku", "quantity", "color"]}},
          "status": {"enum": ["pending", "shipped", "delivered", "cancelled"]},
          "gift": {"type": "boolean"}},
        "required": ["order_id", "customer", "items", "status"]})j"),
       {R"j({"order_id":48213,"customer":{"name":"Maria Gonzalez","tier":"pro"},"items":[{"sku":"TSH-00912-BLK","quantity":2,"color":"blue","note":"Please wrap the shirts separately; one of them is a birthday present for my brother."},{"sku":"MUG-2231","quantity":12,"color":"red"}],"status":"shipped","gift":true})j",
        R"j({"order_id":7,"customer":{"name":"Zoë Ångström-Nakamura (東京支店)","tier":"enterprise"},"items":[{"sku":"A-1","quantity":1000,"color":"green","note":"Deliver to the loading dock at the back, between 9:00 and 17:00 — ask for \"Kenji\"."},{"sku":"B-22","quantity":3,"color":"red"},{"sku":"C-333","quantity":45,"color":"blue","note":"fragile"}],"status":"pending"})j",
        R"j({"order_id":990001,"customer":{"name":"J. Smith","tier":"free"},"items":[{"sku":"gift-card-50","quantity":1,"color":"green","note":"Send the code by e-mail instead of printing it."}],"status":"cancelled","gift":false})j"}},
      {"flat",
       schema(R"j({"title": "Person", "type": "object", "properties": {
          "name": {"title": "Name", "type": "string"}, "age": {"title": "Age", "type": "integer"},
          "email": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null},
          "bio": {"type": "string", "maxLength": 200}, "scores": {"type": "array", "items": {"type": "number"}}},
        "required": ["name", "age", "bio", "scores"]})j"),
       {R"j({"name":"Ada Lovelace","age":36,"email":"ada@analytical.engine","bio":"English mathematician and writer, chiefly known for her work on Charles Babbage's proposed mechanical general-purpose computer, the Analytical Engine.","scores":[98.5,87,91.25,-3.5e-2]})j",
        R"j({"name":"Grace Hopper","age":85,"email":null,"bio":"Computer scientist and United States Navy rear admiral; one of the first programmers of the Harvard Mark I.","scores":[]})j"}},
      {"recursive",
       schema(R"j({"$defs": {"node": {"type": "object", "properties": {"label": {"type": "string"},
          "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["label", "children"]}},
        "$ref": "#/$defs/node"})j"),
       {R"j({"label":"root","children":[{"label":"chapter 1: introduction","children":[{"label":"1.1 motivation","children":[]},{"label":"1.2 outline","children":[]}]},{"label":"chapter 2: methods","children":[{"label":"2.1 data","children":[{"label":"2.1.1 sources","children":[]}]}]}]})j"}},
      {"choice-50", fifty_choices(), {"positive", "neutral", "category 17", "naïve", "日本語", "category 40"}},
      {"regex",
       {ResponseFormat::Type::kRegex,
        R"((19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01]) [A-Z][a-z]+( [A-Z][a-z]+)*, [0-9]{1,5} (EUR|USD))"},
       {"2024-03-17 Maria Gonzalez, 250 EUR", "1999-12-31 Jean Paul Sartre, 7 USD", "2010-01-05 Ada, 99999 EUR"}},
      {"json_object",
       {ResponseFormat::Type::kJsonObject, {}},
       {R"j({"question":"What is the boiling point of water at sea level?","answer":"100 °C (212 °F)","confidence":0.97,"sources":["textbook","https://en.wikipedia.org/wiki/Water"],"meta":{"reviewed":true,"reviewer":null,"tags":[1,2,3]}})j",
        R"j({"id":12,"text":"Il était une fois, dans un petit village au bord de la mer…","labels":{"sentiment":"positive","language":"fr"}})j"}},
  };
}

// The longest-match split of `text` over the vocabulary (for SentencePiece, whose own
// encoding of a text starts with its dummy-prefix space, which generation never writes).
std::vector<TokenId> longest_match(const TokenTrie& trie, std::string_view text) {
  std::vector<TokenId> ids;
  for (size_t at = 0; at < text.size();) {
    uint32_t node = TokenTrie::kRoot;
    std::optional<TokenId> best;
    size_t best_size = 0;
    for (size_t depth = 0; at + depth < text.size(); ++depth) {
      const auto byte = static_cast<uint8_t>(text[at + depth]);
      std::optional<uint32_t> next;
      for (uint32_t c = TokenTrie::first_child(node); c < trie.node(node).node_end; c = trie.node(c).node_end)
        if (trie.node(c).byte == byte) next = c;
      if (!next) break;
      node = *next;
      if (trie.node(node).num_tokens_here > 0) best = trie.token_id(trie.node(node).first_token), best_size = depth + 1;
    }
    if (!best) return {};
    ids.push_back(*best);
    at += best_size;
  }
  return ids;
}

// The baseline: the same automaton without the token classes. At every step it walks the
// whole token trie from the current configurations, on the real stack.
class TrieWalkMasker {
 public:
  TrieWalkMasker(const CompiledGrammar& grammar)
      : grammar_(grammar), levels_(grammar.trie().max_token_bytes() + 1), expanded_(levels_.size()) {
    configs_.push_back({grammar.grammar().rule_start(grammar.grammar().root_rule()), kEmptyStack});
  }
  void fill(std::span<uint32_t> mask) {
    std::fill(mask.begin(), mask.end(), 0u);
    levels_[0] = configs_;
    if (walk(TokenTrie::kRoot, 0, mask))
      for (const TokenId id : grammar_.vocabulary().end_of_generation) allow_token(mask, id);
  }
  void accept(TokenId token) {
    for (const char byte : grammar_.vocabulary().bytes_by_id[static_cast<size_t>(token)]) {
      pda_expand(grammar_.grammar(), stacks_, configs_, expanded_[0], work_);
      pda_advance(grammar_.grammar(), expanded_[0], static_cast<uint8_t>(byte), configs_);
    }
  }

 private:
  bool walk(uint32_t trie_node, size_t depth, std::span<uint32_t> mask) {
    const bool may_end = pda_expand(grammar_.grammar(), stacks_, levels_[depth], expanded_[depth], work_);
    const TokenTrie& trie = grammar_.trie();
    for (uint32_t c = TokenTrie::first_child(trie_node); c < trie.node(trie_node).node_end; c = trie.node(c).node_end) {
      const TokenTrie::Node& child = trie.node(c);
      pda_advance(grammar_.grammar(), expanded_[depth], child.byte, levels_[depth + 1]);
      if (levels_[depth + 1].empty()) continue;
      for (uint32_t t = child.first_token; t < child.first_token + child.num_tokens_here; ++t)
        allow_token(mask, trie.token_id(t));
      if (child.node_end > c + 1) walk(c, depth + 1, mask);
    }
    return may_end;
  }

  const CompiledGrammar& grammar_;
  StackPool stacks_;
  std::vector<PdaConfig> configs_, work_;
  std::vector<std::vector<PdaConfig>> levels_, expanded_;
};

double percentile(std::vector<double> values, double fraction) {
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(fraction * static_cast<double>(values.size())))];
}

struct Row {
  std::string schema;
  size_t num_nodes = 0;
  size_t num_classified = 0;  // trie walks made when compiling (one per class of equivalent nodes)
  double compile_ms = 0;
  double cache_mib = 0;
  size_t num_steps = 0;
  double mask_mean_us = 0, mask_p50_us = 0, mask_p99_us = 0, mask_max_us = 0, accept_mean_us = 0;
  double naive_mean_us = 0;
  bool masks_equal = true;
};

Row run_workload(const Workload& w, const std::shared_ptr<const TokenTrie>& trie, const Tokenizer& tokenizer,
                 int passes) {
  Row row;
  row.schema = w.name;
  const auto start = Clock::now();
  const auto grammar = std::make_shared<const CompiledGrammar>(response_format_grammar(w.format), trie);
  row.compile_ms = 1e3 * seconds_since(start);
  row.num_nodes = grammar->grammar().num_nodes();
  row.num_classified = grammar->masks().num_classified_nodes();
  row.cache_mib = static_cast<double>(grammar->masks().num_bytes()) / (1 << 20);

  std::vector<std::vector<TokenId>> streams;
  for (const char* document : w.documents) {
    streams.push_back(tokenizer.decode_strips_leading_space() ? longest_match(*trie, document)
                                                              : tokenizer.encode(document, false));
  }
  std::vector<uint32_t> mask(token_mask_words(trie->vocabulary().size())), reference(mask.size());
  // Per step, the median over passes: what a step costs on this (possibly shared) machine.
  std::vector<std::vector<double>> mask_us, accept_us;
  for (int pass = 0; pass < passes; ++pass) {
    size_t step = 0;
    for (const auto& stream : streams) {
      GrammarMatcher matcher(grammar);
      for (const TokenId token : stream) {
        auto t0 = Clock::now();
        matcher.fill_next_token_mask(mask);
        const double fill = 1e6 * seconds_since(t0);
        if (!token_allowed(mask, token)) {
          std::fprintf(stderr, "%s: recorded token %d refused at step %zu\n", w.name, token, step);
          std::exit(1);
        }
        t0 = Clock::now();
        const bool accepted = matcher.accept_token(token);
        const double accept = 1e6 * seconds_since(t0);
        if (!accepted) std::exit(1);
        if (pass == 0) mask_us.emplace_back(), accept_us.emplace_back();
        mask_us[step].push_back(fill);
        accept_us[step].push_back(accept);
        ++step;
      }
    }
  }
  std::vector<double> mask_median, accept_median;
  for (size_t s = 0; s < mask_us.size(); ++s) {
    mask_median.push_back(percentile(mask_us[s], 0.5));
    accept_median.push_back(percentile(accept_us[s], 0.5));
  }
  row.num_steps = mask_median.size();
  const auto mean = [](const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  };
  row.mask_mean_us = mean(mask_median);
  row.mask_p50_us = percentile(mask_median, 0.5);
  row.mask_p99_us = percentile(mask_median, 0.99);
  row.mask_max_us = *std::max_element(mask_median.begin(), mask_median.end());
  row.accept_mean_us = mean(accept_median);

  // Baseline, one pass, with the masks compared bit for bit.
  double naive_total_us = 0;
  for (const auto& stream : streams) {
    GrammarMatcher matcher(grammar);
    TrieWalkMasker naive(*grammar);
    for (const TokenId token : stream) {
      matcher.fill_next_token_mask(mask);
      const auto t0 = Clock::now();
      naive.fill(reference);
      naive_total_us += 1e6 * seconds_since(t0);
      row.masks_equal = row.masks_equal && mask == reference;
      (void)matcher.accept_token(token);
      naive.accept(token);
    }
  }
  row.naive_mean_us = naive_total_us / static_cast<double>(row.num_steps);
  return row;
}

void report(const std::string& vocabulary_name, const Tokenizer& tokenizer, int passes) {
  const auto t0 = Clock::now();
  const auto trie = std::make_shared<const TokenTrie>(token_vocabulary(tokenizer));
  const double trie_ms = 1e3 * seconds_since(t0);
  std::printf("\n%s: %s, %d tokens (%zu with text, longest %zu bytes); token trie %.1f ms, %zu nodes\n",
              vocabulary_name.c_str(), tokenizer.decode_strips_leading_space() ? "SentencePiece" : "byte-level BPE",
              tokenizer.vocab_size(), trie->num_tokens(), trie->max_token_bytes(), trie_ms, trie->nodes().size());
  std::printf("mask us per step (median of %d passes per step; target <= 50), baseline = whole-trie walk per step\n",
              passes);
  std::printf("%-12s %7s %6s %10s %8s %6s | %7s %7s %7s %8s %6s | %9s | %9s %8s | %s\n", "schema", "nodes", "walks",
              "compile_ms", "cache_MB", "steps", "mean", "p50", "p99", "max", "<=50us", "accept_us", "naive_us",
              "speedup", "masks=");
  std::string json = "{\"bench\":\"grammar_masks\",\"vocabulary\":\"" + vocabulary_name +
                     "\",\"vocab_size\":" + std::to_string(tokenizer.vocab_size()) + ",\"target_us\":50,\"rows\":[";
  for (const Workload& w : workloads()) {
    const Row r = run_workload(w, trie, tokenizer, passes);
    std::printf("%-12s %7zu %6zu %10.1f %8.2f %6zu | %7.2f %7.2f %7.2f %8.2f %6s | %9.2f | %9.1f %7.0fx | %s\n",
                r.schema.c_str(), r.num_nodes, r.num_classified, r.compile_ms, r.cache_mib, r.num_steps, r.mask_mean_us,
                r.mask_p50_us, r.mask_p99_us, r.mask_max_us, r.mask_mean_us <= 50 ? "yes" : "NO", r.accept_mean_us,
                r.naive_mean_us, r.naive_mean_us / r.mask_mean_us, r.masks_equal ? "yes" : "NO");
    char buffer[512];
    std::snprintf(
        buffer, sizeof buffer,
        "%s{\"schema\":\"%s\",\"nodes\":%zu,\"walks\":%zu,\"compile_ms\":%.1f,\"cache_mib\":%.2f,\"steps\":%zu,\"mask_"
        "mean_us\":%.2f,"
        "\"mask_p50_us\":%.2f,\"mask_p99_us\":%.2f,\"mask_max_us\":%.2f,\"accept_mean_us\":%.2f,\"naive_mean_us\":%.1f,"
        "\"masks_equal\":%s}",
        json.back() == '[' ? "" : ",", r.schema.c_str(), r.num_nodes, r.num_classified, r.compile_ms, r.cache_mib,
        r.num_steps, r.mask_mean_us, r.mask_p50_us, r.mask_p99_us, r.mask_max_us, r.accept_mean_us, r.naive_mean_us,
        r.masks_equal ? "true" : "false");
    json += buffer;
  }
  json += "]}";
  std::printf("%s\n", json.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<std::filesystem::path> model = find_default_model();
  std::vector<std::filesystem::path> vocabularies;
  int passes = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--model" && i + 1 < argc)
      model = argv[++i];
    else if (arg == "--vocab" && i + 1 < argc)
      vocabularies.emplace_back(argv[++i]);
    else if (arg == "--passes" && i + 1 < argc)
      passes = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: bench_grammar [--model FILE] [--vocab FILE.gguf]... [--passes N]\n");
      return 2;
    }
  }
  try {
    if (model) {
      const ModelFiles files(*model);
      report(model->filename().string(), files.tokenizer(), passes);
    } else {
      std::fprintf(stderr,
                   "the default model is not installed (scripts/fetch-model.sh); only --vocab files are measured\n");
    }
    for (const auto& path : vocabularies) report(path.filename().string(), *load_tokenizer(GgufFile(path)), passes);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_grammar: %s\n", e.what());
    return 1;
  }
  return 0;
}
