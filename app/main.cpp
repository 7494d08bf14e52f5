// pagedgen entry point: builds the command line, runs the chosen command, and turns
// every failure into one "pagedgen: error: ..." line on stderr and a documented exit code.
#include <fmt/core.h>

#include <algorithm>
#include <exception>
#include <map>
#include <string>

#include "commands.h"
#include "exit_codes.h"
#include "util/error.h"

namespace {

void print_error(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  fmt::print(stderr, "pagedgen: error: {}\n", message);
}

// The flags that set a core setting (util/error.h SettingError), as the user typed them.
// (generate_run.cpp names --resume itself: its messages read better after a colon.)
std::string flags_of(const std::string& setting) {
  static const std::map<std::string, std::string> flags = {
      {"block_size", "--block-size"},
      {"device", "--device"},
      {"gpu_memory_utilization", "--gpu-memory-utilization"},
      {"kv_cache_memory", "--kv-cache-memory"},
      {"kv_pool", "--num-blocks / --kv-cache-memory / --gpu-memory-utilization"},
      {"max_tokens", "--max-tokens"},
      {"num_blocks", "--num-blocks"},
  };
  const auto it = flags.find(setting);
  return it != flags.end() ? it->second : setting;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pagedgen::app;
  CLI::App app{"pagedgen: offline LLM batch generation with a paged KV cache.", "pagedgen"};
  app.footer(kExitCodesHelp);
  app.require_subcommand(1);
  app.set_version_flag("--version", "pagedgen 0.1.0");
  // One line, like every other error: "pagedgen: error: --block-size: Value 0 not in range [1 - 256]".
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    std::string message = e.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    return fmt::format("pagedgen: error: {} (see --help)\n", message);
  });

  CommandRunner selected;
  add_generate_command(app, selected);
  add_plan_command(app, selected);
  add_sweep_command(app, selected);
  add_merge_command(app, selected);
  add_inspect_command(app, selected);
  add_tokenize_command(app, selected);
  add_render_command(app, selected);
  add_complete_command(app, selected);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  try {
    return selected();
  } catch (const UsageError& e) {
    print_error(e.what());
    return kExitUsage;
  } catch (const pagedgen::SettingError& e) {
    print_error(flags_of(e.setting()) + " " + e.what());  // messages read on from the flag
    return kExitFatal;
  } catch (const pagedgen::Error& e) {
    print_error(e.what());
    return kExitFatal;
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitFatal;
  }
}
