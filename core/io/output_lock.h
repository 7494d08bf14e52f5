// OutputLock: an exclusive lock (flock) on an output file for as long as a run writes it,
// its manifest and its journal, so that a second pagedgen given the same output (or
// another name of it) fails at once instead of interleaving lines with the first. The
// lock is taken on the output file itself, which is created empty when absent; a run that
// never started removes the file it created (release_unstarted), so a failure before the
// first line leaves nothing behind. The kernel drops the lock when the process dies.
#pragma once

#include <filesystem>

namespace pagedgen {

class OutputLock {
 public:
  // Opens (creating it when absent) and locks `path` without waiting. Throws Error when
  // another process holds the lock, or when the file cannot be opened.
  explicit OutputLock(const std::filesystem::path& path);
  ~OutputLock();  // unlocks
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

  // The file did not exist before this lock created it.
  bool created() const { return created_; }
  // Removes the file when this lock created it and nothing was written to it (a run that
  // failed before it started), then unlocks. Never throws.
  void release_unstarted() noexcept;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  bool created_ = false;
};

}  // namespace pagedgen
