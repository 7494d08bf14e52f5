// `pagedgen merge`: joins the outputs of `generate --shard K/N` runs back into input order
// and adds up their stats, after checking from the manifests that the shards are the N
// finished shards of one job (same input, model and settings) that still hold what their
// runs finished with (job/shard_outputs.h), and from the stats files that they are the
// stats of those N shards, each once. All of it before the output is opened.
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
#include "job/shard_outputs.h"
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
RunStats merged_stats(const std::vector<std::string>& paths, const ShardOutputs& job) {
  std::optional<RunStats> total;
  std::map<std::string, std::string> shard_files;  // "K/N" -> the stats file
  for (const std::string& path : paths) {
    const RunStats stats = read_stats(path);
    if (stats.job.job_key != job.job_key)
      fail("stats file '{}' is of another job (job key {}, the shards' is {}): give the stats of these shards", path,
           stats.job.job_key, job.job_key);
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

// Everything is read and checked (shard_outputs.h, the stats) before the output is opened:
// a refused merge (exit 3) leaves an existing output as it was.
int run_merge(const MergeOptions& options) {
  if (report_path_clash(named_paths(options))) return kExitUsage;
  if (!options.stats_path.empty() && options.shard_stats.empty())
    fail("--stats needs the shards' stats files (--shard-stats FILE...)");
  const ShardOutputs shards = check_shard_outputs(
      std::vector<std::filesystem::path>(options.shard_outputs.begin(), options.shard_outputs.end()));
  std::optional<RunStats> stats;
  if (!options.stats_path.empty()) stats = merged_stats(options.shard_stats, shards);
  std::optional<OutputLock> lock;
  std::optional<DurableOutput> output_file;
  if (options.output != "-") {
    lock.emplace(options.output);
    output_file.emplace(options.output, true, 1.0);
  }
  std::ostream& out = output_file ? output_file->stream() : std::cout;
  const uint64_t num_lines = merge_outputs(shards.inputs, &out);
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
      "the shards' stats. Before writing anything, checks from the manifests beside the outputs that they are "
      "the N finished shards of one job (every shard K/N of one N, each once; the same input, a stream's "
      "fingerprint as each run read it; the same model and settings), that each output still holds the lines, "
      "size and hash its run finished with, and that no input line is answered twice; refuses (exit 3) "
      "otherwise, leaving an existing -o as it was.");
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
