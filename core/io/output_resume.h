// Where --resume continues an output file: after its last complete line. A torn last line
// (bytes after the last newline, left by a kill or a crash) is cut off the file first.
//   "...line 7\n{\"id\":\"x\",\"ind"   ->   "...line 7\n"   resume after input line 7
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

namespace pagedgen {

struct ResumePoint {
  std::optional<uint64_t> last_index;  // input line the last complete output line answers; nullopt: none
  uint64_t num_torn_bytes = 0;         // bytes cut after the last newline
  uint64_t num_lines = 0;              // complete lines kept
  bool has_error_lines = false;        // some kept line is an error line (the run's exit code says so)
};

// Cuts the torn tail of `output` (which must exist) and reads the complete lines. Throws
// Error when one of them is not an output line of pagedgen.
ResumePoint prepare_resume(const std::filesystem::path& output);

}  // namespace pagedgen
