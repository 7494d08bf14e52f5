// HF model directories -> tokenizers: tokenizer.model (SentencePiece, loaded as is),
// otherwise tokenizer.json (byte-level BPE: vocab, merges, added_tokens, and the split
// patterns of its pre_tokenizer), with special tokens and add_bos from
// tokenizer_config.json and extra end-of-generation ids from generation_config.json.
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/hf_config.h"
#include "tokenizer/hf_json.h"
#include "tokenizer/sentencepiece_proto.h"
#include "tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer/tokenizer_loader.h"
#include "util/error.h"

namespace pagedgen {
namespace {

namespace fs = std::filesystem;
using namespace hf;
using simdjson::dom::element;
using simdjson::dom::element_type;

// ---- tokenizer.model (SentencePiece) ----------------------------------------------

std::unique_ptr<Tokenizer> load_hf_spm(const fs::path& dir, std::string serialized, const SpmModel& model,
                                       const HfTokenizerConfig& config, std::vector<TokenId> end_ids) {
  const fs::path path = dir / "tokenizer.model";
  std::vector<AddedToken> json_added;
  if (fs::exists(dir / "tokenizer.json")) json_added = read_json_added_tokens(load_json(dir / "tokenizer.json"));
  const std::vector<AddedToken> hf_added = combine_added(std::move(json_added), config.added_tokens);
  IdTable table;
  table.max_entries = model.pieces.size() + hf_added.size();
  table.source = path.string();
  for (const SpmPiece& piece : model.pieces) {
    table.pieces.push_back(piece.text);
    table.types.push_back(piece.type);
  }
  // Added tokens inside the model keep the model's type; the rest extend the table.
  for (const AddedToken& token : hf_added) {
    if (static_cast<size_t>(token.id) >= model.pieces.size()) {
      table.place(token.id, token.text, token.special ? TokenType::Control : TokenType::UserDefined);
    }
  }
  const auto model_id = [&](std::optional<int32_t> id) -> std::optional<TokenId> {
    if (id && static_cast<size_t>(*id) < model.pieces.size()) return *id;
    return std::nullopt;
  };

  // tokenizer_config.json names the special tokens; the model's own ids are the fallback.
  const auto config_or_model = [&](const std::optional<std::string>& text, std::optional<int32_t> id) {
    const auto found = table.find(text);
    return found ? found : model_id(id);
  };
  SpmConfig spm;
  spm.special.bos = config_or_model(config.bos_text, model.bos_id);
  spm.special.eos = config_or_model(config.eos_text, model.eos_id);
  spm.special.unk = config_or_model(config.unk_text, model.unk_id);
  spm.special.pad = config_or_model(config.pad_text, model.pad_id);
  spm.special.add_bos = config.add_bos.value_or(true);  // LlamaTokenizer's default
  spm.special.add_eos = config.add_eos.value_or(false);
  spm.special.end_of_generation = std::move(end_ids);
  spm.serialized_model = std::move(serialized);
  spm.added_tokens = merge_added_tokens(table, hf_added);
  spm.pieces = std::move(table.pieces);
  spm.types = std::move(table.types);
  spm.add_dummy_prefix = model.add_dummy_prefix && !model.treat_whitespace_as_suffix;
  spm.source = path.string();
  return std::make_unique<SentencePieceTokenizer>(std::move(spm));
}

// ---- tokenizer.json (byte-level BPE) ------------------------------------------------

struct PreTokenizerSpec {
  std::vector<SplitRule> rules;
  bool add_prefix_space = false;
  bool byte_level = false;
};

void read_pre_tokenizer(element pre, const JsonFile& file, const std::string& what, PreTokenizerSpec& spec) {
  const auto type_value = member(pre, "type");
  if (!type_value) fail("{}: {} has no \"type\"", file.path.string(), what);
  const std::string_view type = as_string(*type_value, file, what + ".type");
  if (type == "Sequence") {
    const auto list = member(pre, "pretokenizers");
    simdjson::dom::array steps;
    if (!list || list->get_array().get(steps)) fail("{}: {}.pretokenizers should be a list", file.path.string(), what);
    size_t index = 0;
    for (const element step : steps) {
      read_pre_tokenizer(step, file, fmt::format("{}.pretokenizers[{}]", what, index++), spec);
    }
  } else if (type == "ByteLevel") {
    spec.byte_level = true;
    if (bool_member(pre, "add_prefix_space", true, file, what)) {
      // HF adds the space to every piece present when ByteLevel runs; only the first
      // step sees whole text fragments, which is the case we implement.
      if (!spec.rules.empty()) {
        fail(
            "{}: {} is a ByteLevel step with add_prefix_space after other splits, which "
            "pagedgen does not support",
            file.path.string(), what);
      }
      spec.add_prefix_space = true;
    }
    if (bool_member(pre, "use_regex", true, file, what)) spec.rules.push_back({std::string(gpt2_split_pattern())});
  } else if (type == "Split") {
    SplitRule rule;
    const auto pattern = member(pre, "pattern");
    if (const auto regex = pattern ? member(*pattern, "Regex") : std::nullopt) {
      rule.pattern = std::string(as_string(*regex, file, what + ".pattern.Regex"));
    } else if (const auto literal = pattern ? member(*pattern, "String") : std::nullopt) {
      rule.pattern = std::string(as_string(*literal, file, what + ".pattern.String"));
      rule.literal = true;
    } else {
      fail("{}: {}.pattern should be {{\"Regex\": ...}} or {{\"String\": ...}}", file.path.string(), what);
    }
    const std::string_view behavior =
        member(pre, "behavior") ? as_string(*member(pre, "behavior"), file, what + ".behavior") : "Isolated";
    if (behavior == "Removed") {
      rule.behavior = SplitBehavior::Removed;
    } else if (behavior != "Isolated") {
      fail("{}: {}.behavior '{}' is not supported (supported: Isolated, Removed)", file.path.string(), what, behavior);
    }
    if (bool_member(pre, "invert", false, file, what)) {
      fail("{}: {} has invert = true, which pagedgen does not support", file.path.string(), what);
    }
    spec.rules.push_back(std::move(rule));
  } else if (type == "Digits") {
    spec.rules.push_back({bool_member(pre, "individual_digits", false, file, what) ? R"(\p{N})" : R"(\p{N}+)"});
  } else {
    fail("{}: {} type '{}' is not supported (supported: Sequence, Split, ByteLevel, Digits)", file.path.string(), what,
         type);
  }
}

// The token a TemplateProcessing post-processor puts before a single text ("<|begin_of_text|>").
std::optional<std::string> template_prefix_token(element processor, const JsonFile& file) {
  const auto type = member(processor, "type");
  if (!type) return std::nullopt;
  const std::string_view name = as_string(*type, file, "post_processor.type");
  if (name == "Sequence") {
    const auto list = member(processor, "processors");
    if (!list || list->type() != element_type::ARRAY) return std::nullopt;
    for (const element step : items_of(*list)) {
      if (auto token = template_prefix_token(step, file)) return token;
    }
    return std::nullopt;
  }
  if (name != "TemplateProcessing") return std::nullopt;
  const auto single = member(processor, "single");
  if (!single || single->type() != element_type::ARRAY) return std::nullopt;
  for (const element item : items_of(*single)) {
    const auto special = member(item, "SpecialToken");
    if (!special) return std::nullopt;  // the text comes first
    if (const auto id = member(*special, "id"))
      return std::string(as_string(*id, file, "post_processor.single[].SpecialToken.id"));
  }
  return std::nullopt;
}

// tokenizer.json's "model", which must be a BPE model.
element bpe_model(const JsonFile& file) {
  const auto model = member(file.root, "model");
  if (!model) fail("{}: no \"model\"; this is not an HF tokenizer.json", file.path.string());
  if (const auto type = member(*model, "type"); type && as_string(*type, file, "model.type") != "BPE") {
    fail("{}: model.type '{}' is not supported (supported: BPE)", file.path.string(),
         as_string(*type, file, "model.type"));
  }
  return *model;
}

// No normalizer, or NFC, which is accepted without being applied: prompts are almost
// always NFC already.
void check_normalizer(const JsonFile& file) {
  const auto normalizer = member(file.root, "normalizer");
  if (!normalizer) return;
  const auto type = member(*normalizer, "type");
  const std::string_view name = type ? as_string(*type, file, "normalizer.type") : "";
  if (name != "NFC") {
    fail(
        "{}: normalizer '{}' is not supported (only none or NFC); this tokenizer needs its "
        "tokenizer.model or a GGUF conversion",
        file.path.string(), name);
  }
}

// The split rules of the pre_tokenizer, which with the decoder must make this byte-level BPE.
PreTokenizerSpec read_byte_level_pre_tokenizer(const JsonFile& file) {
  PreTokenizerSpec pre;
  if (const auto pre_tokenizer = member(file.root, "pre_tokenizer")) {
    read_pre_tokenizer(*pre_tokenizer, file, "pre_tokenizer", pre);
  }
  const auto decoder = member(file.root, "decoder");
  const auto decoder_type = decoder ? member(*decoder, "type") : std::nullopt;
  if (!pre.byte_level && !(decoder_type && as_string(*decoder_type, file, "decoder.type") == "ByteLevel")) {
    fail(
        "{}: only byte-level BPE tokenizer.json files are supported (no ByteLevel pre-tokenizer "
        "or decoder here); SentencePiece-style models need their tokenizer.model",
        file.path.string());
  }
  return pre;
}

// model.vocab: piece -> id.
simdjson::dom::object vocab_of(element model, const JsonFile& file) {
  simdjson::dom::object vocab;
  const auto vocab_value = member(model, "vocab");
  if (!vocab_value || vocab_value->get_object().get(vocab)) {
    fail("{}: model.vocab should be an object", file.path.string());
  }
  return vocab;
}

// The pieces by id: model.vocab's, then the added tokens.
IdTable vocab_table(simdjson::dom::object vocab, const std::vector<AddedToken>& hf_added, const JsonFile& file) {
  IdTable table;
  table.max_entries = vocab.size() + hf_added.size();
  table.source = file.path.string();
  for (const auto [piece, id_value] : vocab) {
    table.place(as_token_id(id_value, file, fmt::format("model.vocab[\"{}\"]", piece)), std::string(piece),
                TokenType::Normal);
  }
  table.place_added(hf_added);
  return table;
}

// model.merges in rank order, each ["a", "b"] (newer files) or "a b".
std::vector<std::pair<std::string, std::string>> read_merges(element model, const JsonFile& file) {
  const std::string source = file.path.string();
  simdjson::dom::array merges;
  const auto merges_value = member(model, "merges");
  if (!merges_value || merges_value->get_array().get(merges)) fail("{}: model.merges should be a list", source);
  std::vector<std::pair<std::string, std::string>> pairs;
  size_t index = 0;
  for (const element merge : merges) {
    const std::string what = fmt::format("model.merges[{}]", index++);
    if (merge.type() == element_type::ARRAY) {
      std::vector<std::string> sides;
      for (const element side : items_of(merge)) sides.emplace_back(as_string(side, file, what));
      if (sides.size() != 2) fail("{}: {} should have two symbols", source, what);
      pairs.emplace_back(std::move(sides[0]), std::move(sides[1]));
    } else {
      const std::string_view text = as_string(merge, file, what);
      const size_t space = text.find(' ', 1);
      if (space == std::string_view::npos)
        fail("{}: {} = '{}' is not two symbols separated by a space", source, what, text);
      pairs.emplace_back(std::string(text.substr(0, space)), std::string(text.substr(space + 1)));
    }
  }
  return pairs;
}

// The special tokens tokenizer_config.json names; without a BOS there, the token the
// post-processor puts before a text is BOS, and is added when the config does not say.
SpecialTokens bpe_special_tokens(const JsonFile& file, const HfTokenizerConfig& config, const IdTable& table,
                                 std::vector<TokenId> end_ids) {
  SpecialTokens special;
  const auto find = [&](const std::optional<std::string>& text) { return table.find(text); };
  special.bos = find(config.bos_text);
  special.eos = find(config.eos_text);
  special.unk = find(config.unk_text);
  special.pad = find(config.pad_text);
  const auto post_processor = member(file.root, "post_processor");
  const auto prefix_token = post_processor ? template_prefix_token(*post_processor, file) : std::nullopt;
  if (!special.bos && prefix_token) special.bos = find(prefix_token);
  special.add_bos = config.add_bos.value_or(prefix_token.has_value() && special.bos.has_value());
  special.add_eos = config.add_eos.value_or(false);
  special.end_of_generation = std::move(end_ids);
  return special;
}

std::unique_ptr<Tokenizer> load_hf_bpe(const fs::path& dir, const HfTokenizerConfig& config,
                                       std::vector<TokenId> end_ids) {
  const JsonFile file = load_json(dir / "tokenizer.json");
  const element model = bpe_model(file);
  check_normalizer(file);
  PreTokenizerSpec pre = read_byte_level_pre_tokenizer(file);
  const simdjson::dom::object vocab = vocab_of(model, file);
  const std::vector<AddedToken> hf_added = combine_added(read_json_added_tokens(file), config.added_tokens);
  IdTable table = vocab_table(vocab, hf_added, file);

  BpeConfig bpe;
  bpe.merges = read_merges(model, file);
  bpe.special = bpe_special_tokens(file, config, table, std::move(end_ids));
  bpe.pretokenizer = PreTokenizer(std::move(pre.rules), pre.add_prefix_space);
  bpe.ignore_merges = bool_member(model, "ignore_merges", false, file, "model");
  bpe.added_tokens = merge_added_tokens(table, hf_added);
  bpe.pieces = std::move(table.pieces);
  bpe.types = std::move(table.types);
  bpe.source = file.path.string();
  return std::make_unique<BpeTokenizer>(std::move(bpe));
}

}  // namespace

std::unique_ptr<Tokenizer> load_hf_tokenizer(const fs::path& dir) {
  if (!fs::is_directory(dir)) fail("{}: not a directory; expected an HF model directory", dir.string());
  const HfTokenizerConfig config = read_tokenizer_config(dir);
  std::vector<TokenId> end_ids = read_generation_end_ids(dir);
  const bool has_json = fs::exists(dir / "tokenizer.json");
  if (fs::exists(dir / "tokenizer.model")) {
    std::string serialized = read_bytes(dir / "tokenizer.model");
    std::optional<SpmModel> model;
    try {
      model = parse_spm_model(serialized, (dir / "tokenizer.model").string());
    } catch (const Error&) {
      // Some repositories ship a non-SentencePiece tokenizer.model (e.g. tiktoken ranks)
      // next to a tokenizer.json that describes the same tokenizer.
      if (!has_json) throw;
    }
    if (model) return load_hf_spm(dir, std::move(serialized), *model, config, std::move(end_ids));
  }
  if (has_json) return load_hf_bpe(dir, config, std::move(end_ids));
  fail(
      "{}: neither tokenizer.model nor tokenizer.json is there; an HF model directory needs "
      "one of them",
      dir.string());
}

}  // namespace pagedgen
