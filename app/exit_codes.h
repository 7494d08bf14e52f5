// pagedgen's exit codes, documented in --help and the README. Shell scripts depend on
// them: never renumber.
#pragma once

#include <string>

#include "util/error.h"

namespace pagedgen::app {

// A flag's value that only the model shows to be wrong (e.g. --max-model-len past its
// context): a usage error (exit 2) found after parsing; the message starts with the flag.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message) {}
};

inline constexpr int kExitOk = 0;           // everything succeeded
inline constexpr int kExitLinesFailed = 1;  // the run finished, but some input lines got error records
inline constexpr int kExitUsage = 2;        // bad command line (unknown flag, bad value)
inline constexpr int kExitFatal = 3;        // could not run: unreadable model or input, I/O error,
                                            // --resume or merge refused (before writing anything)
inline constexpr int kExitInterrupted = 4;  // stopped by SIGINT or SIGTERM; the output holds whole lines

inline constexpr const char* kExitCodesHelp =
    "Exit codes: 0 success; 1 finished but some input lines failed; 2 usage error;\n"
    "3 fatal error (model or input could not be read; --resume or merge refused, before\n"
    "  writing anything: other settings, wrong shards, an output changed since it finished);\n"
    "4 stopped by SIGINT or SIGTERM, wherever the run was (rerun with --resume to go on).";

}  // namespace pagedgen::app
