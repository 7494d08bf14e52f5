#include "input_file.h"

#include <iostream>

#include "util/error.h"
#include "util/posix_file.h"

namespace pagedgen::app {

InputFile::InputFile(const std::string& path) : use_stdin_(path == "-") {
  if (use_stdin_) return;
  if (const std::optional<std::string> why = why_unreadable(path))
    fail("cannot open the input file '{}': {}", path, *why);
  file_.open(path, std::ios::binary);
  if (!file_) fail("cannot open the input file '{}': {}", path, errno_text(errno));
}

}  // namespace pagedgen::app
