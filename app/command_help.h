// How a subcommand presents itself in --help: one short line above the options (and in
// the top-level list), the longer explanation wrapped below them, then the exit codes.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace pagedgen::app {

// Adds subcommand `name` to `app` with `summary` as its one-line description and `details`
// (one paragraph, wrapped here) plus the exit codes as its footer.
CLI::App* add_command(CLI::App& app, const std::string& name, const std::string& summary, std::string_view details);

// `text` broken into lines of at most `width` columns at spaces.
std::string wrap_text(std::string_view text, std::size_t width = 90);

}  // namespace pagedgen::app
