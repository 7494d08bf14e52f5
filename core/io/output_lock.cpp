#include "io/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include "util/error.h"
#include "util/posix_file.h"

namespace pagedgen {

namespace {

// Opens `path` for writing, creating it when absent; `created` says whether it did.
int open_creating(const std::filesystem::path& path, bool& created) {
  for (;;) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd >= 0 || errno != ENOENT) {
      if (fd < 0) fail("cannot open the output file '{}': {}", path.string(), errno_text(errno));
      created = false;
      return fd;
    }
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      created = true;
      return fd;
    }
    if (errno != EEXIST) fail("cannot create the output file '{}': {}", path.string(), errno_text(errno));
  }
}

}  // namespace

OutputLock::OutputLock(const std::filesystem::path& path) : path_(path) {
  fd_ = open_creating(path, created_);
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      fail("'{}' is being written by another pagedgen process; wait for it to end, or give another output file",
           path.string());
    fail("cannot lock the output file '{}': {}", path.string(), errno_text(err));
  }
  // The path must still name the file locked: a run that failed before it started may
  // have removed the file between this open and this lock.
  const std::optional<FileStatus> locked = fd_status(fd_);
  const std::optional<FileStatus> named = file_status(path);
  if (!locked || !named || !(locked->identity == named->identity)) {
    ::close(fd_);
    fd_ = -1;
    fail("the output file '{}' was removed or replaced while it was being locked; run again", path.string());
  }
}

OutputLock::~OutputLock() {
  if (fd_ >= 0) ::close(fd_);
}

void OutputLock::release_unstarted() noexcept {
  if (fd_ < 0) return;
  const std::optional<FileStatus> status = fd_status(fd_);
  if (created_ && status && status->num_bytes == 0) ::unlink(path_.c_str());
  ::close(fd_);
  fd_ = -1;
}

}  // namespace pagedgen
