// The -m/--model option shared by every command, and how a missing default model is
// reported.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>

namespace pagedgen::app {

// Adds -m/--model to `command`, storing into `path` (empty = the default model).
void add_model_option(CLI::App& command, std::string& path);

// The model to open: `path` if given, else the installed default model. Throws Error
// telling the user how to install the default model when there is none.
std::filesystem::path resolve_model_path(const std::string& path);

}  // namespace pagedgen::app
