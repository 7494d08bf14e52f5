// `pagedgen tokenize`: text to token ids with a model's tokenizer. Needs only the
// vocabulary, so vocabulary-only GGUF files work too.
#include <fmt/ranges.h>
#include <fmt/core.h>

#include <iostream>
#include <iterator>

#include "command_help.h"
#include "commands.h"
#include "exit_codes.h"
#include "loader/model_vocabulary.h"
#include "model_option.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/json_quote.h"

namespace pagedgen::app {

namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  bool pieces = false;
  bool json = false;
  bool add_bos = false;
  bool add_eos = false;
  bool parse_special = false;
};

int run_tokenize(const TokenizeOptions& options) {
  const ModelVocabulary vocabulary(resolve_model_path(options.model));
  const Tokenizer* tokenizer = &vocabulary.tokenizer();
  std::string text = options.text;
  if (text == "-") text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());

  std::vector<TokenId> ids;
  const SpecialTokens& special = tokenizer->special();
  if (options.add_bos) {
    if (!special.bos) fail("--bos: this vocabulary has no BOS token");
    ids.push_back(*special.bos);
  }
  const std::vector<TokenId> body = tokenizer->encode(text, options.parse_special);
  ids.insert(ids.end(), body.begin(), body.end());
  if (options.add_eos) {
    if (!special.eos) fail("--eos: this vocabulary has no EOS token");
    ids.push_back(*special.eos);
  }

  if (options.json) {
    std::string out = fmt::format("{{\"ids\": [{}]", fmt::join(ids, ", "));
    if (options.pieces) {
      out += ", \"pieces\": [";
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) out += ", ";
        append_json_string(out, tokenizer->piece(ids[i]));
      }
      out += "]";
    }
    fmt::print("{}}}\n", out);
  } else if (options.pieces) {
    for (TokenId id : ids) fmt::print("{}\t{}\n", id, json_quote(tokenizer->piece(id)));
  } else {
    fmt::print("{}\n", fmt::join(ids, " "));
  }
  return kExitOk;
}

}  // namespace

void add_tokenize_command(CLI::App& app, CommandRunner& selected) {
  auto options = std::make_shared<TokenizeOptions>();
  CLI::App* cmd =
      add_command(app, "tokenize", "Print the token ids of TEXT.",
                  "By default no BOS/EOS is added and special-token text such as <|im_end|> is tokenized as plain text "
                  "(--bos, --eos, --parse-special change that).");
  add_model_option(*cmd, options->model);
  cmd->add_option("text", options->text, "The text to tokenize; - reads standard input")->required();
  cmd->add_flag("--pieces", options->pieces, "Also print each token's vocabulary piece");
  cmd->add_flag("--json", options->json, "Print {\"ids\": [...]} (with \"pieces\" when --pieces is given)");
  cmd->add_flag("--bos", options->add_bos, "Prepend the BOS token");
  cmd->add_flag("--eos", options->add_eos, "Append the EOS token");
  cmd->add_flag("--parse-special", options->parse_special,
                "Turn special-token text (e.g. <|im_start|>) into its single token id");
  cmd->parse_complete_callback([&selected, options] { selected = [options] { return run_tokenize(*options); }; });
}

}  // namespace pagedgen::app
