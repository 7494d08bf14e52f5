// The input of a command: a file, or standard input for "-". Commands open it before any
// slow work (model load), so a wrong path fails at once.
#pragma once

#include <fstream>
#include <iostream>
#include <string>

namespace pagedgen::app {

class InputFile {
 public:
  // Throws Error naming the path and the reason when the file cannot be opened. A FIFO or a
  // device (/dev/null) is read like standard input.
  explicit InputFile(const std::string& path);
  std::istream& stream() { return use_stdin_ ? std::cin : file_; }

 private:
  bool use_stdin_;
  std::ifstream file_;
};

}  // namespace pagedgen::app
