// Token ids as text: the tokenizer vectors' `.out` files (one case per line, its ids
// separated by spaces) and the same form for messages.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "step/ids.h"

namespace pagedgen::test {

// The rows of ids of an `.out` file.
std::vector<std::vector<TokenId>> read_token_id_lines(const std::filesystem::path& path);

// Ids separated by single spaces (an `.out` line).
std::string join_token_ids(const std::vector<TokenId>& ids);

}  // namespace pagedgen::test
