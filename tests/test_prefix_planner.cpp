// PrefixPlanner: depth-first order and figures on a hand-made set, agreement with a
// stable lexicographic sort and a brute-force prefix count on random sets, and 10^5
// prompts of 300 tokens.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "sched/prefix_planner.h"

using namespace pagedgen;

TEST_CASE("hand-made prompts: depth-first order and figures") {
  const std::vector<std::vector<TokenId>> prompts = {
      {5, 6, 7},  // 0
      {5, 6, 9},  // 1
      {5, 6},     // 2
      {4},        // 3
      {5, 6, 7},  // 4: same as 0, after it
      {5, 8},     // 5
  };
  PrefixPlanner planner;
  for (std::size_t i = 0; i < prompts.size(); ++i) CHECK(planner.add(prompts[i]) == static_cast<int32_t>(i));
  // Nodes: root, [4], [5], [6], [7], [9], [8] (the [5 6] edge was split by [5 8]).
  CHECK(planner.num_nodes() == 7);

  const PrefixPlan plan2 = planner.plan(2);
  CHECK(plan2.order == std::vector<int32_t>{3, 2, 0, 4, 1, 5});
  CHECK(plan2.num_prompt_tokens == 14);
  CHECK(plan2.num_distinct_prompt_tokens == 6);  // 4 | 5, 56, 567, 569, 58
  // Sharing the first block [5 6]: 2, 0, 4, 1. [5 8] shares no full block, [4] is too short.
  CHECK(plan2.num_prefix_groups == 1);
  CHECK(plan2.num_grouped_requests == 4);
  // Per request in order (len, lcp with previous -> prefilled len - min(lcp, len - 1)):
  //   3: (1, 0) -> 1   2: (2, 0) -> 2   0: (3, 2) -> 1   4: (3, 3) -> 1 (a repeat: its last token)
  //   1: (3, 2) -> 1   5: (2, 1) -> 1
  // = 6 distinct tokens + 1 repeated prompt; the same at every block size.
  CHECK(plan2.num_planned_prefill_tokens == 7);

  const PrefixPlan plan1 = planner.plan(1);
  CHECK(plan1.order == plan2.order);
  CHECK(plan1.num_prefix_groups == 1);  // everything starting with 5
  CHECK(plan1.num_grouped_requests == 5);
  CHECK(plan1.num_planned_prefill_tokens == 7);

  const PrefixPlan plan4 = planner.plan(4);
  CHECK(plan4.num_prefix_groups == 0);
  CHECK(plan4.num_planned_prefill_tokens == 7);
}

TEST_CASE("two groups sharing long prefixes") {
  // Group A: 3 requests on a 10-token document; group B: 2 requests on another. Block 4.
  std::vector<TokenId> doc_a(10), doc_b(10);
  std::iota(doc_a.begin(), doc_a.end(), 100);
  std::iota(doc_b.begin(), doc_b.end(), 200);
  std::vector<std::vector<TokenId>> prompts;
  for (TokenId q : {3, 1, 2}) {
    prompts.push_back(doc_a);
    prompts.back().insert(prompts.back().end(), {q, q});
  }
  for (TokenId q : {7, 6}) {
    prompts.push_back(doc_b);
    prompts.back().push_back(q);
  }
  PrefixPlanner planner;
  for (const auto& p : prompts) planner.add(p);
  const PrefixPlan plan = planner.plan(4);
  CHECK(plan.order == std::vector<int32_t>{1, 2, 0, 4, 3});
  CHECK(plan.num_prompt_tokens == 3 * 12 + 2 * 11);
  CHECK(plan.num_distinct_prompt_tokens == 10 + 3 * 2 + 10 + 2);
  CHECK(plan.num_prefix_groups == 2);
  CHECK(plan.num_grouped_requests == 5);
  // The first of a group prefills everything; the others reuse the 10 shared tokens.
  CHECK(plan.num_planned_prefill_tokens == 12 + 2 + 2 + 11 + 1);
  CHECK(plan.num_planned_prefill_tokens == plan.num_distinct_prompt_tokens);
}

TEST_CASE("empty and single-token prompts") {
  const std::vector<TokenId> empty;
  const std::vector<TokenId> one = {3};
  PrefixPlanner planner;
  planner.add(one);
  planner.add(empty);
  planner.add(one);
  const PrefixPlan plan = planner.plan(16);
  CHECK(plan.order == std::vector<int32_t>{1, 0, 2});
  CHECK(plan.num_distinct_prompt_tokens == 1);
  CHECK(plan.num_planned_prefill_tokens == 2);  // a request always computes its last token
  CHECK(PrefixPlanner().plan(16).order.empty());
}

TEST_CASE("random prompts: the order is a stable lexicographic sort; distinct tokens are distinct prefixes") {
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    const int num_prompts = 1 + static_cast<int>(rng() % 60);
    const TokenId vocab = 2 + static_cast<TokenId>(rng() % 3);  // few tokens: lots of sharing
    std::vector<std::vector<TokenId>> prompts(static_cast<std::size_t>(num_prompts));
    for (auto& p : prompts) {
      p.resize(rng() % 12);
      for (auto& t : p) t = static_cast<TokenId>(rng() % static_cast<uint32_t>(vocab));
    }
    PrefixPlanner planner;
    for (const auto& p : prompts) planner.add(p);
    const int32_t block_size = 1 + static_cast<int32_t>(rng() % 4);
    const PrefixPlan plan = planner.plan(block_size);

    std::vector<int32_t> expected(static_cast<std::size_t>(num_prompts));
    std::iota(expected.begin(), expected.end(), 0);
    std::ranges::stable_sort(expected, [&](int32_t a, int32_t b) { return prompts[a] < prompts[b]; });
    CHECK(plan.order == expected);

    std::set<std::vector<TokenId>> prefixes;
    int64_t total = 0;
    for (const auto& p : prompts) {
      total += std::ssize(p);
      for (std::size_t n = 1; n <= p.size(); ++n)
        prefixes.emplace(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(n));
    }
    CHECK(plan.num_distinct_prompt_tokens == std::ssize(prefixes));
    CHECK(plan.num_prompt_tokens == total);
    CHECK(planner.num_nodes() <= 2 * num_prompts + 1);

    // Groups: requests of at least one block, keyed by their first block.
    std::map<std::vector<TokenId>, int> by_first_block;
    for (const auto& p : prompts)
      if (std::ssize(p) >= block_size) ++by_first_block[{p.begin(), p.begin() + block_size}];
    int groups = 0, grouped = 0;
    for (const auto& [block, count] : by_first_block)
      if (count >= 2) ++groups, grouped += count;
    CHECK(plan.num_prefix_groups == groups);
    CHECK(plan.num_grouped_requests == grouped);
  }
}

TEST_CASE("10^5 prompts of 300 tokens plan in O(prompts) nodes") {
  // Prompts are views into one buffer (the planner never copies tokens): 16 "documents"
  // of 200 tokens, each followed by a 100-token tail drawn from a shared random stream.
  constexpr int kNumPrompts = 100000;
  constexpr int kLength = 300;
  std::mt19937 rng(11);
  std::vector<TokenId> buffer(1 << 20);
  for (auto& t : buffer) t = static_cast<TokenId>(rng() % 50000);
  std::vector<std::vector<TokenId>> documents(16, std::vector<TokenId>(kLength));
  for (auto& d : documents)
    for (auto& t : d) t = static_cast<TokenId>(rng() % 50000);
  std::vector<std::vector<TokenId>> owned;  // document prompts: prefix 200 from a document, then a tail
  owned.reserve(kNumPrompts / 2);
  PrefixPlanner planner;
  std::vector<std::span<const TokenId>> views;
  for (int i = 0; i < kNumPrompts; ++i) {
    if (i % 2 == 0) {
      const auto& doc = documents[static_cast<std::size_t>(i / 2) % documents.size()];
      owned.emplace_back(doc.begin(), doc.begin() + 200);
      const std::size_t offset = rng() % (buffer.size() - 100);
      owned.back().insert(owned.back().end(), buffer.begin() + static_cast<std::ptrdiff_t>(offset),
                          buffer.begin() + static_cast<std::ptrdiff_t>(offset) + 100);
      views.emplace_back(owned.back());
    } else {
      views.emplace_back(buffer.data() + rng() % (buffer.size() - kLength), kLength);
    }
    planner.add(views.back());
  }
  CHECK(planner.num_nodes() <= 2 * kNumPrompts + 1);
  const PrefixPlan plan = planner.plan(16);
  REQUIRE(plan.order.size() == static_cast<std::size_t>(kNumPrompts));
  bool sorted = true;
  for (std::size_t i = 1; i < plan.order.size(); ++i) {
    const auto a = views[static_cast<std::size_t>(plan.order[i - 1])];
    const auto b = views[static_cast<std::size_t>(plan.order[i])];
    if (std::ranges::lexicographical_compare(b, a)) sorted = false;
  }
  CHECK(sorted);
  CHECK(plan.num_prompt_tokens == int64_t{kNumPrompts} * kLength);
  CHECK(plan.num_prefix_groups >= 16);  // every document's requests form a group
  CHECK(plan.num_distinct_prompt_tokens < plan.num_prompt_tokens);
}
