#include "input_file.h"

#include <iostream>

#include "util/error.h"

namespace pagedgen::app {

InputFile::InputFile(const std::string& path) : use_stdin_(path == "-") {
  if (use_stdin_) return;
  file_.open(path, std::ios::binary);
  if (!file_) fail("cannot open the input file '{}'", path);
}

}  // namespace pagedgen::app
