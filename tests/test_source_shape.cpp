// The shape limits of core/, app/ and gpu/, checked as the layering test checks includes:
// no function body over 60 lines (kernels and data tables aside) and no .cpp over 400
// lines. The few that are over today are listed with their size as it is: one may shrink
// (then its entry goes), none may grow, and nothing new may join them. And app/ stays thin:
// it drives no engine itself (the jobs in core/job do: DESIGN's "app/ is thin"); the
// architecture's choices are read only by the layer program and the weight loaders.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "test_paths.h"

namespace fs = std::filesystem;

namespace {

constexpr int kMaxFunctionLines = 60;
constexpr int kMaxCppLines = 400;

// Over the limit today: "path" or "path: function" -> its lines now, and why. The kernels
// and data tables stay; anything else over a limit is split, not listed.
struct KnownOverLimit {
  int lines;
  const char* why;
};
const std::map<std::string, KnownOverLimit> kKnownOverLimit = {
    {"core/cpu/cpu_gemm.cpp: tile", {80, "the float GEMM's micro-kernel"}},
    {"core/tokenizer/gguf_pretokenizer.cpp: preset_table", {126, "a data table"}},
};

// `text` with comments, string and character literals and preprocessor lines blanked
// (newlines kept, so that line numbers hold).
std::string code_only(const std::string& text) {
  std::string code = text;
  std::size_t i = 0;
  const auto blank_until = [&](std::size_t end) {  // end may be npos: to the end of the file
    for (; i < end && i < code.size(); ++i)
      if (code[i] != '\n') code[i] = ' ';
  };
  bool line_start = true;
  while (i < code.size()) {
    const char c = code[i];
    const char next = i + 1 < code.size() ? code[i + 1] : '\0';
    if (line_start && c == '#') {  // a directive, with its continuation lines
      std::size_t end = i;
      while (end < code.size() && !(code[end] == '\n' && code[end - 1] != '\\')) ++end;
      blank_until(end);
    } else if (c == '/' && next == '/') {
      blank_until(code.find('\n', i));
    } else if (c == '/' && next == '*') {
      const std::size_t close = code.find("*/", i + 2);
      blank_until(close == std::string::npos ? close : close + 2);
    } else if (c == 'R' && next == '"' && (i == 0 || !std::isalnum(static_cast<unsigned char>(code[i - 1])))) {
      const std::size_t open = code.find('(', i);
      const std::string delimiter = ")" + code.substr(i + 2, open - i - 2) + "\"";
      const std::size_t close = code.find(delimiter, open);
      blank_until(close == std::string::npos ? close : close + delimiter.size());
    } else if (c == '"' || (c == '\'' && (i == 0 || !std::isalnum(static_cast<unsigned char>(code[i - 1]))))) {
      std::size_t end = i + 1;
      while (end < code.size() && code[end] != c) end += code[end] == '\\' ? 2 : 1;
      blank_until(end + 1);
    } else {
      line_start = c == '\n' || (line_start && std::isspace(static_cast<unsigned char>(c)));
      ++i;
      continue;
    }
    line_start = false;
  }
  return code;
}

// A header that ends in an initializer (`T x = {`, `T table[] = {`): an '=' outside
// parentheses that is not part of an operator's name.
bool is_initializer(const std::string& header) {
  static const std::regex operator_name(R"(operator\s*[=!<>]+)");
  const std::string text = std::regex_replace(header, operator_name, "operator");
  int depth = 0;
  for (const char c : text) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (c == '=' && depth == 0) return true;
  }
  return false;
}

struct Body {
  std::string name;  // the function's name, or "" for a body whose header says nothing
  int first_line = 0;
  int num_lines = 0;
};

// The bodies opened at namespace or class scope: functions (and constructor bodies), not
// namespaces, classes or enums, and not initializers (a header with '=': data tables);
// kernels (__global__, __device__) are left out.
std::vector<Body> function_bodies(const std::string& code) {
  static const std::regex scope(R"(^\s*(template\s*<[^{]*>\s*)?(namespace|class|struct|union|enum|extern)\b)");
  static const std::regex name(R"(((?:[A-Za-z_]\w*::)*operator\s*[^\s(]+|[A-Za-z_~][\w:~]*)\s*\()");
  std::vector<Body> bodies;
  std::vector<bool> scope_braces;  // the open braces at scope level (namespace, class)
  std::string header;
  int line = 1;
  for (std::size_t i = 0; i < code.size(); ++i) {
    const char c = code[i];
    if (c == '\n') ++line;
    if (c == '{') {
      if (std::regex_search(header, scope)) {
        scope_braces.push_back(true);
        header.clear();
        continue;
      }
      const bool skip = is_initializer(header) || header.find("__global__") != std::string::npos ||
                        header.find("__device__") != std::string::npos;
      std::smatch match;
      Body body{std::regex_search(header, match, name) ? match[1].str() : "", line, 0};
      int depth = 1;
      for (++i; i < code.size() && depth > 0; ++i) {
        if (code[i] == '\n') ++line;
        depth += code[i] == '{' ? 1 : code[i] == '}' ? -1 : 0;
      }
      --i;
      body.num_lines = line - body.first_line + 1;
      if (!skip) bodies.push_back(body);
      header.clear();
    } else if (c == '}') {
      if (!scope_braces.empty()) scope_braces.pop_back();
      header.clear();
    } else if (c == ';') {
      header.clear();
    } else {
      header += c;
    }
  }
  return bodies;
}

struct SourceFile {
  std::string path;  // relative to the source tree
  std::string text;
};

std::vector<SourceFile> sources() {
  std::vector<SourceFile> files;
  for (const char* top : {"core", "app", "gpu"})
    for (const auto& entry : fs::recursive_directory_iterator(pagedgen::test::source_dir() / top)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".h" && ext != ".cpp" && ext != ".cu" && ext != ".cuh")) continue;
      files.push_back({entry.path().lexically_relative(pagedgen::test::source_dir()).string(),
                       pagedgen::test::read_file(entry.path())});
    }
  std::ranges::sort(files, {}, &SourceFile::path);
  return files;
}

// What is over `limit` as "key" -> lines, against the known list: a new one, a grown one,
// and a known one now within the limit are each a failure message.
std::vector<std::string> ratchet(const std::map<std::string, int>& over, int limit, const std::string& what) {
  std::vector<std::string> failures;
  for (const auto& [key, lines] : over) {
    const auto known = kKnownOverLimit.find(key);
    if (known == kKnownOverLimit.end())
      failures.push_back(key + ": " + std::to_string(lines) + " lines, over the " + std::to_string(limit) + " a " +
                         what + " may have; split it");
    else if (lines > known->second.lines)
      failures.push_back(key + ": grew to " + std::to_string(lines) + " lines from " +
                         std::to_string(known->second.lines) + " (" + known->second.why + ")");
  }
  return failures;
}

int count_lines(const std::string& text) { return static_cast<int>(std::ranges::count(text, '\n')); }

}  // namespace

TEST_CASE("code_only blanks comments, literals and directives and keeps the lines") {
  const std::string text = "#include <x>\nint f() { return '{'; } // }\n/* { */ const char* s = R\"x({)x\" \"}\";\n";
  const std::string code = code_only(text);
  CHECK(count_lines(code) == count_lines(text));
  CHECK(std::ranges::count(code, '{') == 1);
  CHECK(std::ranges::count(code, '}') == 1);
}

TEST_CASE("function_bodies measures functions and leaves scopes and tables out") {
  const std::string code =
      "namespace a {\nstruct S {\n  int f() {\n    return 1;\n  }\n};\nconst int kTable[] = {\n1,\n2};\n"
      "S::S() : x_{1} {\n  y();\n}\n__global__ void k() {\n}\n}  // namespace a\n";
  const std::vector<Body> bodies = function_bodies(code_only(code));
  REQUIRE(bodies.size() == 3);
  CHECK(bodies[0].name == "f");
  CHECK(bodies[0].num_lines == 3);
  CHECK(bodies[1].name == "S::S");  // the member initializer x_{1}
  CHECK(bodies[2].num_lines == 3);  // the constructor's body
  const std::string operators = "bool operator==(const S& o) const {\n  return true;\n}\nvoid g(int x = 0) {\n}\n";
  const std::vector<Body> counted = function_bodies(code_only(operators));
  REQUIRE(counted.size() == 2);
  CHECK(counted[0].name == "operator==");
  CHECK(counted[1].name == "g");
}

TEST_CASE("no function in core/, app/ or gpu/ over 60 lines, no .cpp over 400 (but those listed, not growing)") {
  std::map<std::string, int> long_functions;
  std::map<std::string, int> long_files;
  for (const SourceFile& file : sources()) {
    if (file.path.ends_with(".cpp") && count_lines(file.text) > kMaxCppLines)
      long_files[file.path] = count_lines(file.text);
    for (const Body& body : function_bodies(code_only(file.text)))
      if (body.num_lines > kMaxFunctionLines)
        long_functions[file.path + ": " + (body.name.empty() ? "line " + std::to_string(body.first_line) : body.name)] =
            body.num_lines;
  }
  std::vector<std::string> failures = ratchet(long_files, kMaxCppLines, ".cpp");
  for (const std::string& failure : ratchet(long_functions, kMaxFunctionLines, "function")) failures.push_back(failure);
  for (const auto& [key, known] : kKnownOverLimit)
    if (!long_files.contains(key) && !long_functions.contains(key))
      failures.push_back(key + ": within the limit now; remove it from kKnownOverLimit");
  for (const std::string& failure : failures) FAIL_CHECK(failure);
  CHECK(failures.empty());
}

TEST_CASE("app/ runs no step or request loop: it calls the jobs in core/job") {
  // The engine's loop, as its callers spell it (engine/engine.h, engine/run_to_completion.h).
  const std::string_view loop_calls[] = {".step(", "run_to_completion(", "add_requests(", "has_unfinished("};
  int num_files = 0;
  for (const SourceFile& file : sources()) {
    if (!file.path.starts_with("app/")) continue;
    ++num_files;
    const std::string code = code_only(file.text);
    for (const std::string_view call : loop_calls) {
      CAPTURE(file.path);
      CAPTURE(call);
      CHECK(code.find(call) == std::string::npos);
    }
  }
  CHECK(num_files >= 20);
}

TEST_CASE("a model config's architecture flags are read only by the layer program and the weight loaders") {
  // A config read as config, config_, c or cfg (the names the code gives it).
  static const std::regex flag_read(
      R"(\b(config_?|c|cfg|config\(\))\.(qkv_bias|qk_norm|post_norms|embedding_scale|attention_scale|)"
      R"(attn_logit_softcap|final_logit_softcap|layer_has_window|window_rope_differs|sliding_window|window_layers)\b)");
  // Where they may be read: the config and the layer program (core/model), the loaders, the
  // CUDA weight loader, and `inspect`, which prints them.
  const auto allowed = [](const std::string& path) {
    return path.starts_with("core/model/") || path.starts_with("core/loader/") || path == "gpu/device_weights.cpp" ||
           path == "app/cmd_inspect.cpp";
  };
  int num_reads_allowed = 0;
  for (const SourceFile& file : sources()) {
    const std::string code = code_only(file.text);
    const auto reads = std::distance(std::sregex_iterator(code.begin(), code.end(), flag_read), std::sregex_iterator());
    if (allowed(file.path)) {
      num_reads_allowed += static_cast<int>(reads);
    } else {
      CAPTURE(file.path);
      CHECK(reads == 0);
    }
  }
  CHECK(num_reads_allowed > 10);  // the pattern still finds the reads where they belong
}
