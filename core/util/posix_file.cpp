#include "util/posix_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace pagedgen {

namespace {

FileStatus status_of(const struct stat& st) {
  FileStatus status;
  status.identity = FileIdentity{st.st_dev, st.st_ino};
  status.is_regular = S_ISREG(st.st_mode);
  status.is_directory = S_ISDIR(st.st_mode);
  status.num_bytes = status.is_regular ? static_cast<uint64_t>(st.st_size) : 0;
  return status;
}

}  // namespace

bool write_all(int fd, std::string_view bytes, std::size_t& num_written) {
  num_written = 0;
  while (num_written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + num_written, bytes.size() - num_written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) {
      errno = EIO;
      return false;
    }
    num_written += static_cast<std::size_t>(n);
  }
  return true;
}

bool write_all(int fd, std::string_view bytes) {
  std::size_t num_written = 0;
  return write_all(fd, bytes, num_written);
}

std::string errno_text(int err) { return std::strerror(err); }

std::optional<FileStatus> file_status(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return status_of(st);
}

std::optional<FileStatus> fd_status(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::nullopt;
  return status_of(st);
}

std::optional<std::string> why_unreadable(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno_text(errno);
  if (S_ISDIR(st.st_mode)) return errno_text(EISDIR);
  // A FIFO is not opened here: opening and closing it would let a writer's bytes be lost.
  if (!S_ISREG(st.st_mode)) return ::access(path.c_str(), R_OK) == 0 ? std::nullopt : std::optional(errno_text(errno));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_text(errno);
  ::close(fd);
  return std::nullopt;
}

void remove_file_if_present(const std::filesystem::path& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) fail("cannot remove '{}': {}", path.string(), errno_text(errno));
}

}  // namespace pagedgen
