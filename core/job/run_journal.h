// The run journal, OUT.journal beside a file output: what a run finished that the output
// cannot hold yet, because an earlier line is still running. Requests finish in any order
// and the output is written in input order, so without it a kill would lose every request
// finished after the first unfinished one; with it a kill loses only the requests in
// flight. It also records, when a request starts, the prompt tokens the prefix cache gave
// it: a resumed run reports that figure (`cached_tokens`), as an uninterrupted one would.
//
// One entry per line, each checked by its own hash, so a torn or garbled tail (a kill, a
// power loss) is found and cut; the entries before it stand:
//
//   <fnv1a64 of the rest, 16 hex> l <input line> <the finished output line>
//   <fnv1a64 of the rest, 16 hex> a <input line> <cached prompt tokens at first admission>
//
// A run adds a step's entries with one write(2); the journal is emptied once the output
// holds every line of a window (after an fsync of the output), and removed when the run
// finishes.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace pagedgen {

// OUT + ".journal".
std::filesystem::path journal_path(const std::filesystem::path& output);

struct JournalContents {
  std::map<uint64_t, std::string> lines;      // input line -> its output line (without newline)
  std::map<uint64_t, int64_t> cached_tokens;  // input line -> cached prompt tokens at its first admission
  uint64_t num_valid_bytes = 0;               // the entries before a torn or garbled tail
  uint64_t num_torn_bytes = 0;                // after them
};

// Reads the journal without changing it; an absent file is an empty journal. Throws Error
// only when the file exists and cannot be read.
JournalContents read_journal(const std::filesystem::path& path);

class JournalWriter {
 public:
  // Opens `path` (creating it), keeping its first `num_kept_bytes` bytes: 0 empties it, a
  // resumed run keeps the valid entries. Throws Error naming the file.
  JournalWriter(const std::filesystem::path& path, uint64_t num_kept_bytes, double fsync_interval_seconds);
  ~JournalWriter();  // closes without throwing
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // Entries wait in memory until commit().
  void add_line(uint64_t index, std::string_view line);
  void add_admission(uint64_t index, int64_t cached_tokens);
  // Writes the waiting entries with one write(2), then fsyncs when the last fsync is older
  // than the interval. Throws Error naming the file (a full disk).
  void commit();
  // Empties the file (truncate, fsync): the output holds every line it had.
  void clear();
  // The run finished: closes and removes the file.
  void remove();

  // The errno of the first write, truncate or fsync that failed; nullopt while none did.
  std::optional<int> failure() const { return failure_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void fsync_or_fail();
  [[noreturn]] void fail_with_errno(const char* what);

  std::filesystem::path path_;
  int fd_ = -1;
  std::string pending_;  // entries added since the last commit
  std::chrono::duration<double> fsync_interval_;
  std::chrono::steady_clock::time_point last_fsync_;
  std::optional<int> failure_;
};

}  // namespace pagedgen
