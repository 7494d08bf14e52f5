#include "util/text_file.h"

#include <fstream>

#include "util/error.h"

namespace pagedgen {

void write_text_file(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) fail("cannot write the file '{}'", path);
}

}  // namespace pagedgen
