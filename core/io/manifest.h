// The manifest beside an output file, OUT.manifest.json: the settings that decide the
// output's bytes (input and model fingerprints, sampling defaults, seed, engine settings,
// window and shard), which --resume requires to match, and whether the run finished,
// which `pagedgen merge` requires. Written atomically (temporary file, fsync, rename).
// When the run finishes it also records what the output then held (io/output_coverage.h)
// and, for an input read as a stream, that stream's fingerprint as it was read:
//   {"pagedgen_manifest": 2, "finished": true,
//    "output": {"lines": 10, "bytes": 905, "fnv1a64": "0123456789abcdef"},
//    "input_read": "bytes=... fnv1a64=...", "settings": {"input": "bytes=... fnv1a64=...", ...}}
// Version 1 (before the journal) fingerprinted only a model's first 8 MiB: such a
// manifest is read (merge compares shards written alike) but cannot vouch for a resume.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/output_coverage.h"

namespace pagedgen {

inline constexpr int kManifestVersion = 2;

struct Manifest {
  int version = kManifestVersion;  // as read; a manifest is always written as kManifestVersion
  std::vector<std::pair<std::string, std::string>> settings;  // name, value; in a fixed order
  bool finished = false;                                      // the run read its whole input and wrote every line
  // Recorded when the run finished (absent before, and in manifests of pagedgen before it):
  std::optional<OutputCoverage> output;   // what the output held then
  std::optional<std::string> input_read;  // a stream input's fingerprint, "bytes=N fnv1a64=X", as read

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

// What identifies the job a manifest belongs to, whatever its shard: a 64-bit hash of
// every setting but "shard", as 16 hex digits. The stats of each shard carry it, so that
// `merge` can tell them from the stats of another job.
std::string job_key(const Manifest& manifest);

}  // namespace pagedgen
