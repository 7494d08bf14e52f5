#include "io/output_coverage.h"

#include <fmt/format.h>

#include "util/file_fingerprint.h"

namespace pagedgen {

std::string OutputCoverage::describe() const {
  return fmt::format("{} lines, {} bytes, fnv1a64 {:016x}", num_lines, num_bytes, hash);
}

OutputCoverage measure_output(const std::filesystem::path& output) {
  const FileScan scan = scan_file(output);
  return OutputCoverage{scan.num_lines, scan.num_bytes, scan.hash};
}

std::optional<std::string> describe_coverage_change(const OutputCoverage& recorded, const OutputCoverage& now) {
  if (now == recorded) return std::nullopt;
  return fmt::format("it holds {}; its run finished with {}", now.describe(), recorded.describe());
}

}  // namespace pagedgen
