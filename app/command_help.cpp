#include "command_help.h"

#include "exit_codes.h"

namespace pagedgen::app {

std::string wrap_text(std::string_view text, std::size_t width) {
  std::string out;
  std::size_t line_length = 0;
  while (!text.empty()) {
    const std::size_t space = text.find(' ');
    const std::string_view word = text.substr(0, space);
    if (line_length > 0 && line_length + 1 + word.size() > width) {
      out += '\n';
      line_length = 0;
    } else if (line_length > 0) {
      out += ' ';
      ++line_length;
    }
    out += word;
    line_length += word.size();
    text.remove_prefix(space == std::string_view::npos ? text.size() : space + 1);
  }
  return out;
}

CLI::App* add_command(CLI::App& app, const std::string& name, const std::string& summary, std::string_view details) {
  CLI::App* command = app.add_subcommand(name, summary);
  command->footer(wrap_text(details) + "\n\n" + kExitCodesHelp);
  return command;
}

}  // namespace pagedgen::app
