// Thin checked wrappers over POSIX file descriptors, for the files whose bytes must reach
// the disk (the durable output, the manifest).
#pragma once

#include <string_view>

namespace pagedgen {

// Writes all of `bytes` to `fd`, retrying short writes and EINTR; false on an error (errno set).
bool write_all(int fd, std::string_view bytes);

}  // namespace pagedgen
