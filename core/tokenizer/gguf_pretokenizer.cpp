// The GGUF pre-tokenizer table. Each family's patterns are those of its tokenizer.json;
// llama.cpp's llama-vocab.cpp lists the same ones, some rewritten for std::regex, while
// PCRE2 runs the originals, so \p{Lu} and friends keep their Unicode meaning. Only
// "(?i:'s|...)" is spelled out case by case, as llama.cpp does. Non-ASCII characters are
// written \x{...} so that no editor or normalisation can change them. Several names share
// one family: the converter names a tokenizer after the model it first met it in.
#include "tokenizer/gguf_pretokenizer.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <string>

#include "util/error.h"

namespace pagedgen {
namespace {

struct PresetEntry {
  std::vector<std::string_view> names;
  std::vector<std::string> patterns;
  bool ignore_merges = false;
  bool add_bos = false;
};

std::vector<PresetEntry> preset_table() {
  const std::string gpt2(gpt2_split_pattern());
  // Case-insensitive English contractions, "(?i:'s|'t|'re|'ve|'m|'ll|'d)".
  const std::string contractions = R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))";
  // Llama 3: contractions, letters with one leading non-letter, numbers in groups of at
  // most 3, punctuation keeping its newlines, then whitespace. Qwen 2: single digits.
  const std::string llama3 =
      contractions + R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  const std::string qwen2 =
      contractions + R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  // o200k (GPT-4o) words: an optional leading non-letter, then upper-case and lower-case
  // letters ("HelloWorld" is two words), with a contraction attached.
  const std::string upper = R"([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])";
  const std::string lower = R"([\p{Ll}\p{Lm}\p{Lo}\p{M}])";
  const std::string o200k_words = R"([^\r\n\p{L}\p{N}]?)" + upper + "*" + lower + "+" + contractions + "?" +
                                  R"(|[^\r\n\p{L}\p{N}]?)" + upper + "+" + lower + "*" + contractions + "?";
  const std::string gpt4o = o200k_words + R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  // DeepSeek V3: ASCII punctuation may lead a Latin word; letters keep their marks.
  const std::string deepseek3_words =
      R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+)";
  const std::string cjk_kana = R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)";
  // DeepSeek LLM and Coder: CJK ideographs (and everything from U+0800 up to them) and
  // Hangul syllables in runs.
  const std::string cjk_hangul = R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";
  // BLOOM: at most one space, then anything but whitespace and . , ! ? and their CJK,
  // Devanagari, Urdu and Arabic twins (the parentheses and | are in the class, as in
  // tokenizer.json).
  const std::string bloom = R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)";
  const std::string single_digit = R"(\p{N})";
  const std::string digits_up_to_3 = R"(\p{N}{1,3})";

  return {
      // llama.cpp's "default": punctuation runs first, then GPT-2, then digit runs split
      // into groups of three. Old GGUF files without tokenizer.ggml.pre also mean this.
      {{"default"}, {R"([\p{P}\$\+<=>\^~\|]+)", gpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}},
      {{"gpt-2", "phi-2", "mpt", "olmo", "jais", "trillion", "granite-docling", "exaone4", "a.x-4.0", "gigachat",
        "mellum", "jina-es", "jina-de", "jina-v2-es", "jina-v2-de", "modern-bert"},
       {gpt2}},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"},
       {llama3},
       /*ignore_merges=*/true,
       /*add_bos=*/true},
      {{"dbrx", "smaug-bpe", "chatglm-bpe"}, {llama3}},
      {{"glm4", "glm5"}, {llama3}, /*ignore_merges=*/true},
      // Jais 2: Llama 3 with whitespace runs cut into powers of two.
      {{"jais-2"},
       {contractions + R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+)"
                       R"(|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S))"
                       R"(|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})"}},
      {{"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez", "hunyuan", "solar-open", "grok-2", "kormo", "f2llmv2"},
       {qwen2}},
      // Qwen 3.5: marks stay with their letters.
      {{"qwen35"},
       {contractions +
        R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
      // Qwen 2 without contractions: Turkish suffixes after an apostrophe stay on their word.
      {{"ufakzeka"}, {R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
      {{"laguna"}, {R"([^\n]+|[\n]+)", qwen2}},
      {{"bailingmoe", "bailingmoe2", "llada-moe"},
       {R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N})"
        R"(| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)"}},
      {{"seed-coder"},
       {contractions + R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
      {{"exaone-moe"},
       {contractions + R"(|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?)"
                       R"(|\s*[\r\n]|\s+(?!\S)|\s+)"}},
      {{"minicpm5"},
       {digits_up_to_3,
        contractions + R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
       /*ignore_merges=*/true},
      // Single digits first, then GPT-2 (StarCoder, SmolLM, Command-R, ...).
      {{"starcoder", "smollm", "refact", "codeshell", "command-r", "exaone", "minerva-7b", "mellum2"},
       {single_digit, gpt2}},
      {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", gpt2, "[0-9][0-9][0-9]"}},
      // DeepSeek LLM: newlines alone, then words of Latin, Greek, Cyrillic, Armenian,
      // Georgian, Cherokee, ... letters (the cased scripts) with at most one space before.
      {{"deepseek-llm"},
       {R"([\r\n])",
        R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF})"
        R"(\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1})"
        R"(\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5})"
        R"(\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A})"
        R"(\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B})"
        R"(\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC})"
        R"(\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})"
        R"(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134})"
        R"(\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})"
        R"(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787})"
        R"(\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A})"
        R"(\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})"
        R"(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)",
        R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)", R"(\s+$)", cjk_hangul,
        R"(\p{N}+)"}},
      {{"deepseek-coder"}, {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", cjk_hangul, single_digit}},
      {{"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"},
       {digits_up_to_3, cjk_kana, deepseek3_words + R"(| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
      {{"spark2_5"},
       {digits_up_to_3, cjk_kana, deepseek3_words + R"(| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+)", single_digit}},
      // Mistral's Tekken: o200k words without contractions, single digits, slashes kept
      // with punctuation.
      {{"tekken"},
       {R"([^\r\n\p{L}\p{N}]?)" + upper + "*" + lower + "+" + R"(|[^\r\n\p{L}\p{N}]?)" + upper + "+" + lower + "*" +
        R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
       /*ignore_merges=*/true,
       /*add_bos=*/true},
      {{"gpt-4o", "llama4", "minimax-m2", "kanana2", "talkie"}, {gpt4o}},
      // Tiny Aya: digit runs in thousands groups first.
      {{"tiny_aya", "cohere2moe"}, {R"(\d{1,3}(?=(?:\d{3})*\b))", gpt4o}},
      // Youtu: Hangul, CJK punctuation, Bopomofo and CJK/kana runs first.
      {{"youtu"},
       {R"([\x{AC00}-\x{D7A3}\x{3131}-\x{318E}]+)"
        R"(|[\x{FF01}\x{2026}\x{201C}\x{201D}\x{2018}\x{2019}\x{2014}\x{FF1A}\x{FF1B}\x{FF0C}\x{3001}-\x{303F}\x{FE30}-\x{FE4F}]+)"
        R"(|[\x{3105}-\x{312F}]+|[\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)",
        o200k_words + R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
       /*ignore_merges=*/true},
      // SuperBPE: digit runs cut into thousands by an empty match before each group of three.
      {{"superbpe"}, {R"(\p{N}+)", R"((?=(\d{3})+(?!\d)))"}},
      {{"poro-chat", "bloom", "gpt3-finnish"}, {bloom}},
      {{"viking"}, {bloom, single_digit}},
      {{"chameleon"},
       {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", R"(([\t\n]|    |  ))", single_digit,
        R"([\p{P}!-/:-@\[-`{-~])", gpt2},
       /*ignore_merges=*/false,
       /*add_bos=*/true},
  };
}

}  // namespace

std::vector<std::string_view> supported_gguf_pre_names() {
  std::vector<std::string_view> names;
  for (const PresetEntry& entry : preset_table()) names.insert(names.end(), entry.names.begin(), entry.names.end());
  return names;
}

GgufBpePreset gguf_bpe_preset(std::string_view pre, std::string_view source) {
  for (PresetEntry& entry : preset_table()) {
    if (std::find(entry.names.begin(), entry.names.end(), pre) == entry.names.end()) continue;
    GgufBpePreset preset;
    for (std::string& pattern : entry.patterns) preset.rules.push_back({std::move(pattern)});
    preset.ignore_merges = entry.ignore_merges;
    preset.add_bos = entry.add_bos;
    return preset;
  }
  fail(
      "{}: tokenizer.ggml.pre '{}' is not a pre-tokenizer pagedgen knows (supported: {}); "
      "use a model converted with one of these, or its HF directory (tokenizer.json)",
      source, pre, fmt::join(supported_gguf_pre_names(), ", "));
}

}  // namespace pagedgen
