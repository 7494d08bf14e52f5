// DurableOutput: a run's output file, appended to through an ostream. Each flush() hands
// the buffered bytes to the OS (write(2)), so a killed process loses nothing already
// flushed; fsync follows a flush when the last one is older than the interval, and close()
// fsyncs, so a machine crash loses at most the last interval's lines. At most the last
// line can be torn; --resume drops it (io/output_resume.h). After a failed write it still
// says how many lines it got into the file whole, for the message (a full disk).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
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

  // Flushes and fsyncs now, whatever the interval. Throws Error when it failed.
  void sync();

  // Flushes, fsyncs and closes. Throws Error when any of it failed.
  void close();

  // Newlines this object wrote into the file whole: the lines it completed there.
  uint64_t num_complete_lines() const;
  // The errno of the first write or fsync that failed; nullopt while none did.
  std::optional<int> failure() const;

 private:
  class FileBuffer;  // the std::streambuf over the file descriptor
  std::unique_ptr<FileBuffer> buffer_;
  std::ostream stream_;
};

}  // namespace pagedgen
