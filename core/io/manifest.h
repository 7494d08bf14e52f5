// The manifest beside an output file, OUT.manifest.json: the settings that decide the
// output's bytes (input and model fingerprints, sampling defaults, seed, engine settings,
// window and shard), which --resume requires to match, and whether the run finished,
// which `pagedgen merge` requires. Written atomically (temporary file, fsync, rename).
//   {"pagedgen_manifest": 1, "finished": false, "settings": {"input": "bytes=... fnv1a64=...", ...}}
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pagedgen {

struct Manifest {
  std::vector<std::pair<std::string, std::string>> settings;  // name, value; in a fixed order
  bool finished = false;  // the run read its whole input and wrote every line

  std::string to_json() const;
  // The value of a setting; nullopt when absent.
  std::optional<std::string> setting(std::string_view name) const;
};

// OUT + ".manifest.json".
std::filesystem::path manifest_path(const std::filesystem::path& output);

// nullopt when the file does not exist; throws Error when it is unreadable or malformed.
std::optional<Manifest> read_manifest(const std::filesystem::path& path);
// Throws Error when it cannot be written.
void write_manifest(const std::filesystem::path& path, const Manifest& manifest);

// The first setting that differs between `saved` and `now` (or is in only one of them),
// said as "NAME was X, now Y"; nullopt when they agree. `ignored` names a setting left out.
std::optional<std::string> describe_difference(const Manifest& saved, const Manifest& now,
                                               std::string_view ignored = {});

}  // namespace pagedgen
