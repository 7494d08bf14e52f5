#include "job/job_resume.h"

#include <string>

#include "io/output_resume.h"
#include "util/error.h"

namespace pagedgen {

ResumeState prepare_job_resume(const std::filesystem::path& output, const Manifest& manifest) {
  const std::optional<Manifest> saved = read_manifest(manifest_path(output));
  const bool has_output = std::filesystem::exists(output) && std::filesystem::file_size(output) > 0;
  if (!saved) {
    if (has_output)
      fail_setting("resume",
                   "'{}' has no manifest '{}', so nothing tells which settings wrote it; run again without resuming "
                   "to start over",
                   output.string(), manifest_path(output).string());
    return {};
  }
  if (const std::optional<std::string> difference = describe_difference(*saved, manifest))
    fail_setting("resume",
                 "'{}' was written with other settings ({}); give the same input, model and settings, or run again "
                 "without resuming to start over",
                 output.string(), *difference);
  if (!std::filesystem::exists(output)) return {};
  const ResumePoint point = prepare_resume(output);
  return ResumeState{point.last_index, point.has_error_lines, saved->finished, point.num_torn_bytes};
}

}  // namespace pagedgen
