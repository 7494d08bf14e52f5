// Invariant failures: a bug in pagedgen, never a user error. Print where and stop.
#include "util/error.h"

#include <cstdio>
#include <cstdlib>

namespace pagedgen {

void check_failed(const char* expression, const char* file, int line, const std::string& detail) {
  std::fprintf(stderr, "pagedgen: internal error: check '%s' failed at %s:%d%s%s\n", expression, file, line,
               detail.empty() ? "" : ": ", detail.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace pagedgen
