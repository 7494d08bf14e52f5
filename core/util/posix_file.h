// Thin checked wrappers over POSIX file descriptors, for the files whose bytes must reach
// the disk (the durable output, the manifest, the journal), and the file facts a batch job
// checks before it writes anything: which file a path names, and why it cannot be opened.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace pagedgen {

// Writes all of `bytes` to `fd`, retrying short writes and EINTR; false on an error (errno set).
bool write_all(int fd, std::string_view bytes);
// The same, counting in `num_written` the bytes that did reach the file, also on an error.
bool write_all(int fd, std::string_view bytes, std::size_t& num_written);

// strerror(err) as a message part: "No such file or directory".
std::string errno_text(int err);

// What a path names (after symlinks): two paths with equal identities are one file.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const FileIdentity&) const = default;
};

struct FileStatus {
  FileIdentity identity;
  bool is_regular = false;  // false for a FIFO, a character device (/dev/null), a socket, a directory
  bool is_directory = false;
  uint64_t num_bytes = 0;  // of a regular file
};

// nullopt when the path names nothing (or cannot be looked up).
std::optional<FileStatus> file_status(const std::filesystem::path& path);
// The same for an open descriptor (e.g. 0 for standard input).
std::optional<FileStatus> fd_status(int fd);

// Why `path` cannot be opened for reading ("No such file or directory", "Is a directory",
// "Permission denied"); nullopt when it can.
std::optional<std::string> why_unreadable(const std::filesystem::path& path);

// Removes `path` if it exists; throws Error naming it when it exists and cannot be removed.
void remove_file_if_present(const std::filesystem::path& path);

}  // namespace pagedgen
