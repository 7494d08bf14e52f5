#include "path_clash.h"

#include <fmt/core.h>

#include <filesystem>
#include <system_error>

#include "util/posix_file.h"

namespace pagedgen::app {

namespace {

struct Resolved {
  const NamedPath* named;
  std::string name;                      // absolute and normalized; empty for a stream
  std::optional<FileIdentity> identity;  // when it names an existing regular file
};

Resolved resolve(const NamedPath& named) {
  Resolved r{&named, "", std::nullopt};
  const std::optional<FileStatus> status = named.path == "-" ? fd_status(named.stream_fd) : file_status(named.path);
  if (status && !status->is_regular) return r;  // a FIFO, a device, a terminal: never emptied
  if (status) r.identity = status->identity;
  if (named.path != "-") {
    const std::filesystem::path absolute = std::filesystem::absolute(named.path).lexically_normal();
    std::error_code error;
    const std::filesystem::path canonical = std::filesystem::weakly_canonical(absolute, error);
    r.name = (error ? absolute : canonical).string();
  }
  return r;
}

bool same_file(const Resolved& a, const Resolved& b) {
  if (a.identity && b.identity) return *a.identity == *b.identity;
  return !a.name.empty() && a.name == b.name;
}

}  // namespace

std::optional<std::string> find_path_clash(const std::vector<NamedPath>& paths) {
  std::vector<Resolved> resolved;
  for (const NamedPath& named : paths)
    if (!named.path.empty()) resolved.push_back(resolve(named));
  for (std::size_t i = 0; i < resolved.size(); ++i)
    for (std::size_t j = i + 1; j < resolved.size(); ++j) {
      const NamedPath& a = *resolved[i].named;
      const NamedPath& b = *resolved[j].named;
      if (!(a.written || b.written) || !same_file(resolved[i], resolved[j])) continue;
      const NamedPath& written = b.written ? b : a;
      const NamedPath& other = b.written ? a : b;
      return fmt::format("{} '{}' and {} '{}' are one file: writing {} would destroy {}; give another file", a.what,
                         a.path, b.what, b.path, written.what, other.written ? "the other" : "it before it is read");
    }
  return std::nullopt;
}

bool report_path_clash(const std::vector<NamedPath>& paths) {
  const std::optional<std::string> clash = find_path_clash(paths);
  if (clash) fmt::print(stderr, "pagedgen: error: {}\n", *clash);
  return clash.has_value();
}

}  // namespace pagedgen::app
