// The smallest plain output record, for the tests of output files (coverage, shards,
// merging): its line holds only the input line's index.
#pragma once

#include <cstdint>
#include <string>

namespace pagedgen::test {

// `{"id":null,"index":N}` and its newline.
inline std::string plain_record_line(uint64_t index) {
  return "{\"id\":null,\"index\":" + std::to_string(index) + "}\n";
}

}  // namespace pagedgen::test
