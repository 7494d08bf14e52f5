// find_path_clash (app/path_clash.h): a written path that names a read or written one, by
// name before the files exist and by inode once they do; reads alone and devices never clash.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "path_clash.h"

using namespace pagedgen::app;

namespace {

struct Dir {
  std::filesystem::path path = std::filesystem::temp_directory_path() / "pagedgen-path-clash";
  Dir() {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path / "sub");
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

}  // namespace

TEST_CASE("files that do not exist yet clash by name, whatever the spelling") {
  const Dir dir;
  const auto clash = find_path_clash({{"-o", dir / "out.jsonl", true}, {"--stats", dir / "sub/../out.jsonl", true}});
  REQUIRE(clash.has_value());
  CHECK(*clash == "-o '" + (dir / "out.jsonl") + "' and --stats '" + (dir / "sub/../out.jsonl") +
                      "' are one file: writing --stats would destroy the other; give another file");
  CHECK_FALSE(find_path_clash({{"-o", dir / "out.jsonl", true}, {"--stats", dir / "out.stats.json", true}}));
  CHECK_FALSE(find_path_clash({{"-o", dir / "out.jsonl", true}, {"--stats", "", true}}));  // not given
}

TEST_CASE("existing files clash by inode: a hard link is the same file") {
  const Dir dir;
  std::ofstream(dir / "in.jsonl") << "{}\n";
  REQUIRE(::link((dir / "in.jsonl").c_str(), (dir / "link.jsonl").c_str()) == 0);
  const auto clash = find_path_clash({{"-i", dir / "in.jsonl", false}, {"-o", dir / "link.jsonl", true}});
  REQUIRE(clash.has_value());
  CHECK(clash->find("writing -o would destroy it before it is read") != std::string::npos);
  // Two reads of one file, or a device written twice, are no clash.
  CHECK_FALSE(find_path_clash({{"the shard", dir / "in.jsonl", false}, {"--shard-stats", dir / "link.jsonl", false}}));
  CHECK_FALSE(find_path_clash({{"-o", "/dev/null", true}, {"--stats", "/dev/null", true}}));
}
