// PrefixPlanner: puts every tokenized prompt of the input in a token trie and returns the
// requests in its depth-first order, so that requests sharing a prefix are scheduled next
// to each other while the prefix's blocks are resident, plus figures on what is shared.
//
// The trie is a radix trie: a node's edge is a run of tokens named by (a prompt holding it,
// [begin, end) depths), so it needs O(number of prompts) nodes however long the prompts.
//
//   prompts  0:[5 6 7]  1:[5 6 9]  2:[5 6]  3:[4]
//
//   root --[4]--> (3)
//        --[5 6]--> (2) --[7]--> (0)
//                       --[9]--> (1)
//
//   depth-first order (children by ascending first token, a node's requests before its
//   children's, requests at one node in input order): 3, 2, 0, 1 -- the lexicographic order.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "step/ids.h"

namespace pagedgen {

struct PrefixPlan {
  std::vector<int32_t> order;              // [num requests] request indices in depth-first order
  int64_t num_prompt_tokens = 0;           // sum of prompt lengths
  int64_t num_distinct_prompt_tokens = 0;  // token-trie nodes, root excluded: distinct (prefix, token) pairs
  // A prefix group: 2 or more requests whose first full block (first block_size tokens) is
  // the same, i.e. that can share at least one physical block. Requests shorter than a
  // block belong to none.
  int32_t num_prefix_groups = 0;
  int32_t num_grouped_requests = 0;
  // Prompt tokens prefilled when the requests run in `order` and each one reuses the tokens
  // it shares with the one before it (never its last token): for each request,
  //   len - min(lcp with the previous request, len - 1),
  // that is the distinct tokens plus one per repeated prompt. The scheduler reaches exactly
  // this when the pool never evicts, nothing is preempted, and the block holding the end of
  // each shared part is filled by the earlier request's prompt (full blocks are shared; the
  // tokens of a block that is shared only in part are copied, see PrefixMatch).
  int64_t num_planned_prefill_tokens = 0;
};

class PrefixPlanner {
 public:
  // Adds a prompt and returns its request index (0, 1, ...). The planner keeps a view of
  // the tokens: their storage must outlive it.
  int32_t add(std::span<const TokenId> prompt);
  int32_t num_requests() const { return static_cast<int32_t>(prompts_.size()); }
  int64_t num_nodes() const { return static_cast<int64_t>(nodes_.size()); }  // radix nodes, root included

  PrefixPlan plan(int32_t block_size) const;

 private:
  struct Node {
    int32_t source = 0;  // a request whose prompt holds this node's edge tokens
    int32_t begin = 0;   // edge = prompts_[source][begin, end); end is the node's depth
    int32_t end = 0;
    std::vector<int32_t> children;  // node indices, ascending by their edge's first token
    std::vector<int32_t> requests;  // requests whose prompt ends here, in input order
  };

  TokenId first_token(const Node& node) const { return prompts_[node.source][node.begin]; }

  std::vector<std::span<const TokenId>> prompts_;
  std::vector<Node> nodes_ = std::vector<Node>(1);  // nodes_[0] is the root (depth 0)
};

}  // namespace pagedgen
