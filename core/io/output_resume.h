// Where --resume continues an output file: after its last complete line. A torn last line
// (bytes after the last newline, left by a kill or a crash) is cut off the file first.
//   "...line 7\n{\"id\":\"x\",\"ind"   ->   "...line 7\n"   resume after input line 7
// Every complete line must answer a later input line than the one before it (one writer
// in input order) and, when the caller says which lines its run owns, one of those.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>

namespace pagedgen {

struct ResumePoint {
  std::optional<uint64_t> last_index;  // input line the last complete output line answers; nullopt: none
  uint64_t num_torn_bytes = 0;         // bytes after the last newline (cut by prepare_resume)
  uint64_t num_kept_bytes = 0;         // bytes up to and with the last newline
  uint64_t num_lines = 0;              // complete lines kept
  bool has_error_lines = false;        // some kept line is an error line (the run's exit code says so)
};

// Which input lines a run owns (its shard); empty: every line.
using OwnedLines = std::function<bool(uint64_t line)>;

// Reads the complete lines of `output` (which must exist) without changing it. Throws
// Error, naming the file and line, when a line is not an output line of pagedgen, answers
// an input line not after the previous line's, or one that `owned` says is not this run's.
ResumePoint read_resume_point(const std::filesystem::path& output, const OwnedLines& owned = {});

// read_resume_point, then cuts the torn tail off the file.
ResumePoint prepare_resume(const std::filesystem::path& output, const OwnedLines& owned = {});

// Cuts `output` to its first `num_bytes` bytes. Throws Error naming the file.
void cut_file(const std::filesystem::path& output, uint64_t num_bytes);

}  // namespace pagedgen
