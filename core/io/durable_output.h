// DurableOutput: a run's output file, appended to through an ostream. Each flush() hands
// the buffered bytes to the OS (write(2)), so a killed process loses nothing already
// flushed; fsync follows a flush when the last one is older than the interval, and close()
// fsyncs, so a machine crash loses at most the last interval's lines. At most the last
// line can be torn; --resume drops it (io/output_resume.h).
#pragma once

#include <filesystem>
#include <memory>
#include <ostream>

namespace pagedgen {

class DurableOutput {
 public:
  // Opens `path` for appending, creating it if absent and emptying it first when
  // `truncate`. Throws Error when it cannot be opened.
  DurableOutput(const std::filesystem::path& path, bool truncate, double fsync_interval_seconds);
  ~DurableOutput();  // closes without throwing (call close() to see errors)
  DurableOutput(const DurableOutput&) = delete;
  DurableOutput& operator=(const DurableOutput&) = delete;

  // Fails (badbit) when a write or fsync fails.
  std::ostream& stream() { return stream_; }

  // Flushes, fsyncs and closes. Throws Error when any of it failed.
  void close();

 private:
  class FileBuffer;  // the std::streambuf over the file descriptor
  std::unique_ptr<FileBuffer> buffer_;
  std::ostream stream_;
};

}  // namespace pagedgen
