#include "io/manifest.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "util/error.h"
#include "util/fnv_hash.h"
#include "util/json_quote.h"
#include "util/posix_file.h"

namespace pagedgen {

namespace {

constexpr int kOldestReadableVersion = 1;

void append_output_record(std::string& out, const Manifest& manifest) {
  if (manifest.output)
    out += fmt::format("\"output\": {{\"lines\": {}, \"bytes\": {}, \"fnv1a64\": \"{:016x}\"}}, ",
                       manifest.output->num_lines, manifest.output->num_bytes, manifest.output->hash);
  if (manifest.input_read) {
    out += "\"input_read\": ";
    append_json_string(out, *manifest.input_read);
    out += ", ";
  }
}

// The "output" and "input_read" a finished run recorded, when present.
void read_output_record(simdjson::dom::element root, const std::filesystem::path& path, Manifest& manifest) {
  simdjson::dom::object output;
  if (root["output"].get(output) == simdjson::SUCCESS) {
    OutputCoverage coverage;
    std::string_view hash;
    const bool ok =
        output["lines"].get(coverage.num_lines) == simdjson::SUCCESS &&
        output["bytes"].get(coverage.num_bytes) == simdjson::SUCCESS &&
        output["fnv1a64"].get(hash) == simdjson::SUCCESS && hash.size() == 16 &&
        std::from_chars(hash.data(), hash.data() + hash.size(), coverage.hash, 16).ptr == hash.data() + hash.size();
    if (!ok)
      fail(
          "the manifest '{}' has a malformed \"output\" record (lines, bytes, fnv1a64); delete it and the output "
          "to start over",
          path.string());
    manifest.output = coverage;
  }
  std::string_view input_read;
  if (root["input_read"].get(input_read) == simdjson::SUCCESS) manifest.input_read = std::string(input_read);
}

}  // namespace

std::string Manifest::to_json() const {
  std::string out =
      fmt::format("{{\"pagedgen_manifest\": {}, \"finished\": {}, ", kManifestVersion, finished ? "true" : "false");
  append_output_record(out, *this);
  out += "\"settings\": {";
  for (std::size_t i = 0; i < settings.size(); ++i) {
    out += i == 0 ? "\n  " : ",\n  ";
    append_json_string(out, settings[i].first);
    out += ": ";
    append_json_string(out, settings[i].second);
  }
  out += "\n}}\n";
  return out;
}

std::optional<std::string> Manifest::setting(std::string_view name) const {
  for (const auto& [key, value] : settings)
    if (key == name) return value;
  return std::nullopt;
}

std::filesystem::path manifest_path(const std::filesystem::path& output) {
  return std::filesystem::path(output.string() + ".manifest.json");
}

std::optional<Manifest> read_manifest(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.load(path.string()).get(root) != simdjson::SUCCESS)
    fail("the manifest '{}' is not valid JSON; delete it and the output to start over", path.string());
  int64_t version = 0;
  Manifest manifest;
  simdjson::dom::object settings;
  if (root["pagedgen_manifest"].get(version) != simdjson::SUCCESS || version < kOldestReadableVersion ||
      version > kManifestVersion || root["finished"].get(manifest.finished) != simdjson::SUCCESS ||
      root["settings"].get(settings) != simdjson::SUCCESS)
    fail("'{}' is not a pagedgen manifest of version {} to {}; delete it and the output to start over", path.string(),
         kOldestReadableVersion, kManifestVersion);
  manifest.version = static_cast<int>(version);
  read_output_record(root, path, manifest);
  for (auto [key, value] : settings) {
    std::string_view text;
    if (value.get(text) != simdjson::SUCCESS) fail("manifest '{}': setting \"{}\" is not a string", path.string(), key);
    manifest.settings.emplace_back(std::string(key), std::string(text));
  }
  return manifest;
}

void write_manifest(const std::filesystem::path& path, const Manifest& manifest) {
  const std::filesystem::path temporary(path.string() + ".tmp");
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create '{}': {}", temporary.string(), std::strerror(errno));
  const bool ok = write_all(fd, manifest.to_json()) && ::fsync(fd) == 0;
  const int saved_errno = errno;
  ::close(fd);
  if (!ok) fail("cannot write '{}': {}", temporary.string(), std::strerror(saved_errno));
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) fail("cannot rename '{}' to '{}': {}", temporary.string(), path.string(), error.message());
}

std::optional<std::string> describe_difference(const Manifest& saved, const Manifest& now, std::string_view ignored) {
  for (const auto& [name, value] : now.settings) {
    if (name == ignored) continue;
    const std::optional<std::string> was = saved.setting(name);
    if (!was) return fmt::format("{} was not recorded, now {}", name, value);
    if (*was != value) return fmt::format("{} was {}, now {}", name, *was, value);
  }
  for (const auto& [name, value] : saved.settings)
    if (name != ignored && !now.setting(name)) return fmt::format("{} was {}, now not given", name, value);
  return std::nullopt;
}

}  // namespace pagedgen

namespace pagedgen {

std::string job_key(const Manifest& manifest) {
  uint64_t hash = kFnvOffsetBasis;
  for (const auto& [name, value] : manifest.settings) {
    if (name == "shard") continue;
    // Each string with its length first, so that no two lists hash the same bytes.
    hash = fnv1a_le(hash, name.size(), 8);
    hash = fnv1a_bytes(hash, name);
    hash = fnv1a_le(hash, value.size(), 8);
    hash = fnv1a_bytes(hash, value);
  }
  return fmt::format("{:016x}", splitmix64_finalize(hash));
}

}  // namespace pagedgen
