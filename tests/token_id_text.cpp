#include "token_id_text.h"

#include <sstream>

#include "test_paths.h"

namespace pagedgen::test {

std::vector<std::vector<TokenId>> read_token_id_lines(const std::filesystem::path& path) {
  std::istringstream lines(read_file(path));
  std::vector<std::vector<TokenId>> rows;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream ids(line);
    std::vector<TokenId>& row = rows.emplace_back();
    for (TokenId id = 0; ids >> id;) row.push_back(id);
  }
  return rows;
}

std::string join_token_ids(const std::vector<TokenId>& ids) {
  std::string text;
  for (const TokenId id : ids) text += (text.empty() ? "" : " ") + std::to_string(id);
  return text;
}

}  // namespace pagedgen::test
