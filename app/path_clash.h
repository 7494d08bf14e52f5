// One path given twice to a command: an output that is also an input or another output
// would be emptied or overwritten before it is read or while it is written. Every path a
// command writes is compared with every other path it reads or writes, by name (made
// absolute, "." and ".." resolved, symlinks followed where they exist) and, for files that
// exist, by device and inode (hard links, bind mounts), before anything is written.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace pagedgen::app {

struct NamedPath {
  std::string what;  // how the user named it: "-o", "--stats", "-o's manifest"
  std::string path;  // "-" for a standard stream (its descriptor is compared instead)
  bool written = false;
  int stream_fd = -1;  // for "-": 0 (read) or 1 (written)
};

// The first clash, as a message naming both and why it is refused; nullopt when none. Only
// regular files and names that do not exist yet count (a terminal may well be both
// standard input and output; /dev/null may take two streams).
std::optional<std::string> find_path_clash(const std::vector<NamedPath>& paths);

// find_path_clash's message on stderr as an error; true when there was a clash (the command
// then exits with the usage code, before writing anything).
bool report_path_clash(const std::vector<NamedPath>& paths);

}  // namespace pagedgen::app
