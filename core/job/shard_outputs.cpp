#include "job/shard_outputs.h"

#include <charconv>
#include <optional>
#include <set>

#include "io/manifest.h"
#include "util/error.h"

namespace pagedgen {

namespace {

struct ShardId {
  uint64_t shard = 0;       // K
  uint64_t num_shards = 0;  // N
};

bool parse_number(std::string_view text, uint64_t& value) {
  return !text.empty() &&
         std::from_chars(text.data(), text.data() + text.size(), value).ptr == text.data() + text.size();
}

// The manifest of a finished run, with its output record.
Manifest finished_manifest(const std::filesystem::path& output) {
  const std::optional<Manifest> manifest = read_manifest(manifest_path(output));
  if (!manifest)
    fail("'{}' has no manifest '{}': merge only outputs written to files by `generate --shard`", output.string(),
         manifest_path(output).string());
  if (!manifest->finished)
    fail("'{}' is not finished (its run was interrupted); run that shard again with --resume first", output.string());
  if (!manifest->output)
    fail(
        "'{}' was finished by a pagedgen that did not record its output's lines, size and hash, so merge cannot tell "
        "whether lines were lost since; run that shard again (without --resume)",
        output.string());
  return *manifest;
}

// "K/N" with 0 <= K < N.
ShardId shard_of(const Manifest& manifest, const std::filesystem::path& output) {
  const std::string text = manifest.setting("shard").value_or("");
  const std::size_t slash = text.find('/');
  ShardId id;
  if (slash == std::string::npos || !parse_number(std::string_view(text).substr(0, slash), id.shard) ||
      !parse_number(std::string_view(text).substr(slash + 1), id.num_shards) || id.shard >= id.num_shards)
    fail("the manifest of '{}' gives the shard as '{}', not K/N with 0 <= K < N; run that shard again", output.string(),
         text);
  return id;
}

// A stream has no fingerprint among the settings ("standard input"): the one each run
// recorded as it read must be the same.
void check_same_input(const Manifest& first, const std::filesystem::path& first_path, const Manifest& manifest,
                      const std::filesystem::path& output) {
  const bool stream = !manifest.setting("input").value_or("").starts_with("bytes=");
  if (stream && !manifest.input_read)
    fail("'{}' was read from a stream whose fingerprint its run did not record; run that shard again", output.string());
  if (manifest.input_read != first.input_read)
    fail("'{}' and '{}' were read from different inputs (input read: {}, then {}); merge the shards of one input",
         first_path.string(), output.string(), first.input_read.value_or("a file"),
         manifest.input_read.value_or("a file"));
}

// Each manifest is of a finished shard of the first's job, all of one N, each K once, all N.
ShardOutputs check_manifests(const std::vector<std::filesystem::path>& outputs) {
  ShardOutputs result;
  std::optional<Manifest> first;
  std::set<uint64_t> shards;
  for (const std::filesystem::path& output : outputs) {
    const Manifest manifest = finished_manifest(output);
    const ShardId id = shard_of(manifest, output);
    if (!first) {
      first = manifest;
      result.num_shards = id.num_shards;
    } else if (id.num_shards != result.num_shards) {
      fail("'{}' is shard {}/{} but '{}' is one of {} shards: give the shards of one --shard K/N job", output.string(),
           id.shard, id.num_shards, outputs.front().string(), result.num_shards);
    } else if (const std::optional<std::string> difference = describe_difference(*first, manifest, "shard")) {
      fail("'{}' is not a shard of the same job as '{}' ({})", output.string(), outputs.front().string(), *difference);
    }
    check_same_input(*first, outputs.front(), manifest, output);
    if (!shards.insert(id.shard).second)
      fail("shard {}/{} is given twice ('{}')", id.shard, id.num_shards, output.string());
    result.inputs.push_back({output, manifest.output});
  }
  if (shards.size() != result.num_shards)
    fail("{} shard outputs given, but the job has {} shards: give every shard 0/{} .. {}/{} once", shards.size(),
         result.num_shards, result.num_shards, result.num_shards - 1, result.num_shards);
  result.job_key = job_key(*first);
  return result;
}

}  // namespace

ShardOutputs check_shard_outputs(const std::vector<std::filesystem::path>& outputs) {
  if (outputs.empty()) fail("no shard outputs given: give the outputs of every shard of a `generate --shard` job");
  ShardOutputs result = check_manifests(outputs);
  result.num_lines = merge_outputs(result.inputs, nullptr);
  return result;
}

}  // namespace pagedgen
