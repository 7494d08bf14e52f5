// write_text_file: replaces a file's contents, or throws Error naming the file.
#pragma once

#include <string>
#include <string_view>

namespace pagedgen {

void write_text_file(const std::string& path, std::string_view text);

}  // namespace pagedgen
