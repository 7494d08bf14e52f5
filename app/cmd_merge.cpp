// `pagedgen merge`: joins the outputs of `generate --shard K/N` runs back into input order
// and adds up their stats, after checking from the manifests that the shards are the N
// finished shards of one job (same input, model and settings), and from the stats files
// that they are the stats of those N shards, each once.
#include <fmt/core.h>

#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "command_help.h"
#include "commands.h"
#include "job/run_stats.h"
#include "exit_codes.h"
#include "io/durable_output.h"
#include "io/manifest.h"
#include "io/output_lock.h"
#include "io/output_merge.h"
#include "path_clash.h"
#include "util/error.h"
#include "util/posix_file.h"
#include "util/text_file.h"

namespace pagedgen::app {

namespace {

struct MergeOptions {
  std::vector<std::string> shard_outputs;
  std::string output;
  std::string stats_path;
  std::vector<std::string> shard_stats;
  bool quiet = false;
};

// The job the shard outputs are the shards of.
struct ShardedJob {
  std::string key;  // io/manifest.h job_key
  uint64_t num_shards = 0;
};

// Every shard output has a manifest of a finished run; they differ only in their shard,
// and their shards are 0/N .. N-1/N, each once.
ShardedJob check_shards(const std::vector<std::string>& outputs) {
  std::optional<Manifest> first;
  std::set<std::string> shards;
  std::string num_shards;
  for (const std::string& output : outputs) {
    const std::optional<Manifest> manifest = read_manifest(manifest_path(output));
    if (!manifest)
      fail("'{}' has no manifest '{}': merge only outputs written to files by `generate --shard`", output,
           manifest_path(output).string());
    if (!manifest->finished)
      fail("'{}' is not finished (its run was interrupted); run that shard again with --resume first", output);
    const std::string shard = manifest->setting("shard").value_or("");
    if (!shards.insert(shard).second) fail("shard {} is given twice ('{}')", shard, output);
    if (!first) {
      first = manifest;
      num_shards = shard.substr(shard.find('/') + 1);
    } else if (const std::optional<std::string> difference = describe_difference(*first, *manifest, "shard")) {
      fail("'{}' is not a shard of the same job as '{}' ({})", output, outputs.front(), *difference);
    }
  }
  if (std::to_string(shards.size()) != num_shards)
    fail("{} shard outputs given, but the job has {} shards: give every shard 0/{} .. {}/{} once", shards.size(),
         num_shards, num_shards, std::stoull(num_shards) - 1, num_shards);
  return ShardedJob{job_key(*first), std::stoull(num_shards)};
}

// Every path merge reads or writes: the shards, their manifests and stats, the merged output
// and stats (path_clash.h compares them; the output is emptied first).
std::vector<NamedPath> named_paths(const MergeOptions& o) {
  std::vector<NamedPath> paths = {{"-o", o.output, true, 1}, {"--stats", o.stats_path, true}};
  for (const std::string& shard : o.shard_outputs) {
    paths.push_back({"the shard", shard});
    paths.push_back({"the shard's manifest", manifest_path(shard).string()});
  }
  for (const std::string& stats : o.shard_stats) paths.push_back({"--shard-stats", stats});
  return paths;
}

RunStats read_stats(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) fail("cannot open the stats file '{}': {}", path, errno_text(errno));
  std::ostringstream text;
  text << file.rdbuf();
  try {
    return RunStats::from_json(text.str());
  } catch (const Error& error) {
    fail("stats file '{}': {} (stats files of pagedgen before the job key cannot be merged; run that shard again)",
         path, error.what());
  }
}

// Each stats file is of one shard of `job`, each shard's once, and none is missing.
RunStats merged_stats(const std::vector<std::string>& paths, const ShardedJob& job) {
  std::optional<RunStats> total;
  std::map<std::string, std::string> shard_files;  // "K/N" -> the stats file
  for (const std::string& path : paths) {
    const RunStats stats = read_stats(path);
    if (stats.job.job_key != job.key)
      fail("stats file '{}' is of another job (job key {}, the shards' is {}): give the stats of these shards", path,
           stats.job.job_key, job.key);
    const auto [it, inserted] = shard_files.emplace(stats.job.shard, path);
    if (!inserted)
      fail("stats files '{}' and '{}' are both of shard {}: give each shard's once", it->second, path, stats.job.shard);
    if (total)
      total->add_run(stats);
    else
      total = stats;
  }
  for (uint64_t k = 0; k < job.num_shards; ++k)
    if (!shard_files.contains(fmt::format("{}/{}", k, job.num_shards)))
      fail("no stats file of shard {}/{} among --shard-stats: give the stats of every shard once", k, job.num_shards);
  total->job.shard = fmt::format("all/{}", job.num_shards);
  return *total;
}

int run_merge(const MergeOptions& options) {
  if (report_path_clash(named_paths(options))) return kExitUsage;
  if (!options.stats_path.empty() && options.shard_stats.empty())
    fail("--stats needs the shards' stats files (--shard-stats FILE...)");
  const ShardedJob job = check_shards(options.shard_outputs);
  std::optional<RunStats> stats;
  if (!options.stats_path.empty()) stats = merged_stats(options.shard_stats, job);
  std::optional<OutputLock> lock;
  std::optional<DurableOutput> output_file;
  if (options.output != "-") {
    lock.emplace(options.output);
    output_file.emplace(options.output, true, 1.0);
  }
  std::ostream& out = output_file ? output_file->stream() : std::cout;
  const std::vector<std::filesystem::path> inputs(options.shard_outputs.begin(), options.shard_outputs.end());
  const uint64_t num_lines = merge_outputs(inputs, out);
  if (output_file) output_file->close();
  if (stats) {
    write_text_file(options.stats_path, stats->to_json());
    if (!options.quiet) fmt::print(stderr, "{}", stats->summary());
  }
  if (!options.quiet)
    fmt::print(stderr, "pagedgen: merged {} lines from {} shards\n", num_lines, options.shard_outputs.size());
  return kExitOk;
}

}  // namespace

void add_merge_command(CLI::App& app, CommandRunner& selected) {
  auto o = std::make_shared<MergeOptions>();
  CLI::App* cmd = add_command(
      app, "merge", "Join the outputs of `generate --shard K/N` runs into one file in input order.",
      "The merged file holds the same bytes a single run with the same --plan-window writes, and --stats adds up "
      "the shards' stats. Checks from the manifests beside the outputs that they are the N finished shards of "
      "one job.");
  cmd->add_option("shard_outputs", o->shard_outputs, "The shards' output files, in any order")->required();
  cmd->add_option("-o,--output", o->output, "Merged output file; - writes standard output")->required();
  cmd->add_option("--stats", o->stats_path,
                  "Write the shards' stats added up (counts and times summed, peaks the largest) to this JSON file");
  cmd->add_option("--shard-stats", o->shard_stats,
                  "The shards' --stats files, for --stats; give it after the shard outputs: it takes every argument "
                  "that follows");
  cmd->add_flag("-q,--quiet", o->quiet, "No summary on stderr");
  cmd->parse_complete_callback([&selected, o] { selected = [o] { return run_merge(*o); }; });
}

}  // namespace pagedgen::app
