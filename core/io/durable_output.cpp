#include "io/durable_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
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
    if (fd_ < 0) fail("cannot open the output file '{}': {}", path.string(), errno_text(errno));
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }

  ~FileBuffer() override {
    if (fd_ >= 0) ::close(fd_);
  }

  // Writes what is buffered and fsyncs; throws Error on failure.
  void close() {
    const bool ok = write_buffered() && fsync_now();
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0 && ok) note_failure(errno);
    if (failure_) fail("writing the output file '{}' failed: {}", path_.string(), errno_text(*failure_));
  }

  void sync_now() {
    if (!write_buffered() || !fsync_now())
      fail("writing the output file '{}' failed: {}", path_.string(), errno_text(failure_.value_or(EIO)));
  }

  uint64_t num_complete_lines() const { return num_complete_lines_; }
  std::optional<int> failure() const { return failure_; }

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
    return fsync_now() ? 0 : -1;
  }

 private:
  using Clock = std::chrono::steady_clock;

  void note_failure(int err) {
    if (!failure_) failure_ = err;
  }

  bool fsync_now() {
    last_fsync_ = Clock::now();
    if (fd_ >= 0 && ::fsync(fd_) == 0) return true;
    note_failure(fd_ >= 0 ? errno : EBADF);
    return false;
  }

  // Hands the buffered bytes to the OS; counts the newlines that got there, even when
  // the write failed part way (a full disk), so that the count holds only whole lines.
  bool write_buffered() {
    const std::string_view bytes(pbase(), static_cast<std::size_t>(pptr() - pbase()));
    std::size_t num_written = 0;
    const bool ok = fd_ >= 0 && !failure_ && write_all(fd_, bytes, num_written);
    if (!ok) note_failure(fd_ >= 0 && !failure_ ? errno : failure_.value_or(EBADF));
    num_complete_lines_ += static_cast<uint64_t>(std::count(bytes.begin(), bytes.begin() + num_written, '\n'));
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return ok;
  }

  std::filesystem::path path_;
  std::chrono::duration<double> fsync_interval_;
  Clock::time_point last_fsync_ = Clock::now();
  std::vector<char> buffer_;  // [64 KiB] bytes not yet written: [pbase(), pptr())
  int fd_ = -1;
  uint64_t num_complete_lines_ = 0;
  std::optional<int> failure_;  // errno of the first failed write or fsync; later writes are not tried
};

DurableOutput::DurableOutput(const std::filesystem::path& path, bool truncate, double fsync_interval_seconds)
    : buffer_(std::make_unique<FileBuffer>(path, truncate, fsync_interval_seconds)), stream_(buffer_.get()) {}

DurableOutput::~DurableOutput() = default;

void DurableOutput::close() { buffer_->close(); }

void DurableOutput::sync() { buffer_->sync_now(); }

uint64_t DurableOutput::num_complete_lines() const { return buffer_->num_complete_lines(); }

std::optional<int> DurableOutput::failure() const { return buffer_->failure(); }

}  // namespace pagedgen
