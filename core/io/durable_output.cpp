#include "io/durable_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <streambuf>
#include <vector>

#include "util/error.h"
#include "util/posix_file.h"

namespace pagedgen {

class DurableOutput::FileBuffer : public std::streambuf {
 public:
  FileBuffer(const std::filesystem::path& path, bool truncate, double fsync_interval_seconds)
      : path_(path), fsync_interval_(fsync_interval_seconds), buffer_(std::size_t{1} << 16) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
    if (fd_ < 0) fail("cannot open the output file '{}': {}", path.string(), std::strerror(errno));
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }

  ~FileBuffer() override {
    if (fd_ >= 0) ::close(fd_);
  }

  // Writes what is buffered and fsyncs; throws Error on failure.
  void close() {
    const bool ok = write_buffered() && ::fsync(fd_) == 0;
    const int saved_errno = errno;
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0 || !ok)
      fail("writing the output file '{}' failed: {}", path_.string(), std::strerror(ok ? errno : saved_errno));
  }

 protected:
  int_type overflow(int_type c) override {
    if (!write_buffered()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }

  int sync() override {
    if (!write_buffered()) return -1;
    if (Clock::now() - last_fsync_ < fsync_interval_) return 0;
    last_fsync_ = Clock::now();
    return ::fsync(fd_) == 0 ? 0 : -1;
  }

 private:
  using Clock = std::chrono::steady_clock;

  bool write_buffered() {
    const bool ok = fd_ >= 0 && write_all(fd_, std::string_view(pbase(), static_cast<std::size_t>(pptr() - pbase())));
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return ok;
  }

  std::filesystem::path path_;
  std::chrono::duration<double> fsync_interval_;
  Clock::time_point last_fsync_ = Clock::now();
  std::vector<char> buffer_;  // [64 KiB] bytes not yet written: [pbase(), pptr())
  int fd_ = -1;
};

DurableOutput::DurableOutput(const std::filesystem::path& path, bool truncate, double fsync_interval_seconds)
    : buffer_(std::make_unique<FileBuffer>(path, truncate, fsync_interval_seconds)), stream_(buffer_.get()) {}

DurableOutput::~DurableOutput() = default;

void DurableOutput::close() { buffer_->close(); }

}  // namespace pagedgen
