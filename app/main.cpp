// pagedgen entry point: builds the command line, runs the chosen command, and turns
// every failure into one "pagedgen: error: ..." line on stderr and a documented exit code.
#include <fmt/core.h>

#include <algorithm>
#include <exception>
#include <string>

#include "commands.h"
#include "exit_codes.h"
#include "util/error.h"

namespace {

void print_error(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  fmt::print(stderr, "pagedgen: error: {}\n", message);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pagedgen::app;
  CLI::App app{"pagedgen: offline LLM batch generation with a paged KV cache.", "pagedgen"};
  app.footer(kExitCodesHelp);
  app.require_subcommand(1);
  app.set_version_flag("--version", "pagedgen 0.1.0");

  CommandRunner selected;
  add_generate_command(app, selected);
  add_plan_command(app, selected);
  add_sweep_command(app, selected);
  add_merge_command(app, selected);
  add_inspect_command(app, selected);
  add_tokenize_command(app, selected);
  add_complete_command(app, selected);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  try {
    return selected();
  } catch (const pagedgen::Error& e) {
    print_error(e.what());
    return kExitFatal;
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitFatal;
  }
}
