// Nodes that no token can tell apart. Two nodes are equivalent when, for every byte
// string up to `max_bytes` long (the longest token), they accept the same strings, end
// their rule after the same ones and run into the same follow bytes: then every token
// falls in the same class at both, and the token mask cache classifies only one of them.
// A string with maxLength 200 has 201 counted positions, but all those with room for
// the longest token left behave alike.
//
// Found by partition refinement, one level per byte (a node's class at level k, which
// tells apart strings of up to k + 1 bytes: its own class at k-1, whether it ends its rule, its rule's follow bytes,
// its byte edges' target classes at k-1, its calls' callee-start classes at k and return classes at k-1), stopped early
// once a level splits no class.
#pragma once

#include <cstddef>
#include <vector>

#include "grammar/grammar.h"
#include "util/stop_token.h"

namespace pagedgen {

// [node] -> the lowest-numbered node of its class.
// Throws Stopped when `stop` asks (read once per level).
std::vector<GrammarNodeId> equivalent_nodes(const Grammar& grammar, size_t max_bytes, const StopToken& stop = {});

}  // namespace pagedgen
