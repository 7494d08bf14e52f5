// Every subcommand registers itself on the top-level CLI11 app. When the command line
// selects it, `selected` is set to the function that runs it and returns the exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

#include "generate_options.h"

namespace pagedgen::app {

using CommandRunner = std::function<int()>;

void add_inspect_command(CLI::App& app, CommandRunner& selected);
void add_tokenize_command(CLI::App& app, CommandRunner& selected);
void add_render_command(CLI::App& app, CommandRunner& selected);
void add_complete_command(CLI::App& app, CommandRunner& selected);
void add_generate_command(CLI::App& app, CommandRunner& selected);
// `generate` with its flags parsing into `options` (add_generate_command runs them).
CLI::App* add_generate_flags(CLI::App& app, GenerateOptions& options);
void add_plan_command(CLI::App& app, CommandRunner& selected);
void add_sweep_command(CLI::App& app, CommandRunner& selected);
void add_merge_command(CLI::App& app, CommandRunner& selected);

}  // namespace pagedgen::app
