// PrefixPlanner: radix-trie insertion, the depth-first order, and the sharing figures.
#include "sched/prefix_planner.h"

#include <algorithm>

#include "util/error.h"

namespace pagedgen {
namespace {

int64_t common_prefix_length(std::span<const TokenId> a, std::span<const TokenId> b) {
  const auto [end_a, end_b] = std::ranges::mismatch(a, b);
  return end_a - a.begin();
}

}  // namespace

int32_t PrefixPlanner::add(std::span<const TokenId> prompt) {
  PG_CHECK(prompts_.size() < static_cast<std::size_t>(INT32_MAX), "too many prompts");
  const auto request = static_cast<int32_t>(prompts_.size());
  prompts_.push_back(prompt);
  const auto length = static_cast<int32_t>(prompt.size());
  int32_t node = 0;
  int32_t depth = 0;
  while (depth < length) {
    // The child whose edge starts with the next token, if any (children stay sorted).
    const TokenId token = prompt[depth];
    std::vector<int32_t>& children = nodes_[node].children;
    const auto slot = std::ranges::lower_bound(children, token, {}, [&](int32_t c) { return first_token(nodes_[c]); });
    const auto slot_index = slot - children.begin();
    if (slot == children.end() || first_token(nodes_[*slot]) != token) {
      const auto leaf = static_cast<int32_t>(nodes_.size());
      children.insert(slot, leaf);  // before nodes_ grows: `children` refers into it
      nodes_.push_back(Node{.source = request, .begin = depth, .end = length, .children = {}, .requests = {}});
      node = leaf;
      depth = length;
      break;
    }
    const int32_t child = *slot;
    const Node& edge = nodes_[child];
    const auto edge_tokens = prompts_[edge.source].subspan(edge.begin, edge.end - edge.begin);
    const auto matched = static_cast<int32_t>(common_prefix_length(edge_tokens, prompt.subspan(depth)));
    if (matched == edge.end - edge.begin) {
      node = child;
      depth += matched;
      continue;
    }
    // The prompt leaves the edge part way: split it at the divergence point.
    //   node --[edge]--> child   becomes   node --[head]--> middle --[tail]--> child
    const auto middle = static_cast<int32_t>(nodes_.size());
    Node split{
        .source = edge.source, .begin = edge.begin, .end = edge.begin + matched, .children = {child}, .requests = {}};
    nodes_[child].begin += matched;
    nodes_[node].children[slot_index] = middle;  // same first token: order is kept
    nodes_.push_back(std::move(split));
    node = middle;
    depth += matched;
  }
  nodes_[node].requests.push_back(request);
  return request;
}

PrefixPlan PrefixPlanner::plan(int32_t block_size) const {
  PG_CHECK(block_size >= 1, "block size {}", block_size);
  PrefixPlan plan;
  plan.order.reserve(prompts_.size());
  // Iterative pre-order walk: the trie can be as deep as there are prompts.
  std::vector<int32_t> stack = {0};
  while (!stack.empty()) {
    const Node& node = nodes_[stack.back()];
    stack.pop_back();
    plan.order.insert(plan.order.end(), node.requests.begin(), node.requests.end());
    stack.insert(stack.end(), node.children.rbegin(), node.children.rend());
    plan.num_distinct_prompt_tokens += node.end - node.begin;
  }
  PG_CHECK(plan.order.size() == prompts_.size(), "planner lost requests: {} of {}", plan.order.size(), prompts_.size());

  // Figures from neighbours in the order: each request shares with earlier ones at most
  // what it shares with the one right before it (the order is lexicographic).
  int64_t sum_common_prefix = 0;
  int32_t group_size = 0;  // requests so far in the current run sharing a first block
  for (std::size_t i = 0; i < plan.order.size(); ++i) {
    const std::span<const TokenId> prompt = prompts_[plan.order[i]];
    const int64_t length = std::ssize(prompt);
    const int64_t lcp = i == 0 ? 0 : common_prefix_length(prompts_[plan.order[i - 1]], prompt);
    plan.num_prompt_tokens += length;
    sum_common_prefix += lcp;
    plan.num_planned_prefill_tokens += length - (length == 0 ? 0 : std::min(lcp, length - 1));

    const bool joins_group = lcp >= block_size;
    if (!joins_group) group_size = length >= block_size ? 1 : 0;
    if (joins_group && ++group_size == 2) {
      ++plan.num_prefix_groups;
      plan.num_grouped_requests += 2;
    } else if (joins_group) {
      ++plan.num_grouped_requests;
    }
  }
  PG_CHECK(plan.num_prompt_tokens - sum_common_prefix == plan.num_distinct_prompt_tokens,
           "trie holds {} tokens, neighbours say {}", plan.num_distinct_prompt_tokens,
           plan.num_prompt_tokens - sum_common_prefix);
  return plan;
}

}  // namespace pagedgen
